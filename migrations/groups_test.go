package migrations_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/migrations"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// 0031 drops "no answer" from the groups of failures without an HTTP
// answer, as models.ErrorGroup now makes them, so that a link failed before
// the upgrade and one failed after it fall in one group; groups with an
// HTTP code are left alone.
func TestGroupsMigrationDropsNoAnswer(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		// 0031 only rewrites rows: run it again over links written the old way.
		require.NoError(t, db.Exec("DELETE FROM schema_migrations WHERE version = 31").Error)
		now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		groups := map[string]string{
			"1": "erp · no answer · order is no longer routed to erp in the configuration",
			"2": "crm · no answer · gave up after N attempts; last: no answer within Ns",
			"3": "crm · HTTP 422 · title is required",
		}
		for id, group := range groups {
			require.NoError(t, db.Exec(`INSERT INTO external_map (local_type, local_id, external_service, external_key, status, error_group, next_attempt_at, created_at, updated_at)
				VALUES ('order', ?, 'crm', ?, 'failed', ?, ?, ?, ?)`, id, "k"+id, group, now, now, now).Error)
		}
		require.NoError(t, db.Exec(`INSERT INTO stat_failed_groups (error_group, aside, n, example_id, counted_at) VALUES (?, FALSE, 1, 1, ?)`, groups["1"], now).Error)

		n, err := migrations.Apply(db)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		want := map[string]string{
			"1": "erp · order is no longer routed to erp in the configuration",
			"2": "crm · gave up after N attempts; last: no answer within Ns",
			"3": "crm · HTTP 422 · title is required",
		}
		for id, group := range want {
			var got string
			require.NoError(t, db.Raw("SELECT error_group FROM external_map WHERE local_id = ?", id).Row().Scan(&got))
			require.Equal(t, group, got, "order/%s", id)
		}
		var counted int64
		require.NoError(t, db.Raw("SELECT COUNT(*) FROM stat_failed_groups").Row().Scan(&counted))
		require.Zero(t, counted, "the counts under the old names go; the next count makes them anew")
	})
}
