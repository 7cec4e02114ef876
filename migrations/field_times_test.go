package migrations_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/migrations"
	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// 0033 adds the records' field times without rewriting a row: a record
// written before it knows no field's time, and each of its fields counts
// as changed when the record last did.
func TestFieldTimesMigrationLeavesOldRecordsOnTheirLastChange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		// Back to version 32: 0033 is the newest, and only adds two columns.
		require.NoError(t, db.Exec("ALTER TABLE records DROP COLUMN field_times").Error)
		require.NoError(t, db.Exec("ALTER TABLE records DROP COLUMN field_times_since").Error)
		require.NoError(t, db.Exec("DELETE FROM schema_migrations WHERE version = 33").Error)
		created := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		changed := created.Add(48 * time.Hour)
		require.NoError(t, db.Exec(`INSERT INTO records (local_type, local_id, payload, content_hash, created_at, updated_at)
			VALUES ('order', '1', '{"a":1}', 'h', ?, ?)`, created, changed).Error)

		n, err := migrations.Apply(db)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		rec, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.Equal(t, "{}", rec.FieldTimes)
		require.Nil(t, rec.FieldTimesSince)
		times, err := rec.ChangeTimes()
		require.NoError(t, err)
		require.Equal(t, changed, times.Of("a").UTC())
	})
}
