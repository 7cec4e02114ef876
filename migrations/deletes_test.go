package migrations_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models/dbtest"
)

// 0025 lets a link be 'deleted' and a discrepancy 'deleted_but_present',
// and still refuses any other word: the CHECKs were widened, not dropped.
func TestDeletesMigrationWidensTheChecks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		link := func(id, status string) error {
			return db.Exec(`INSERT INTO external_map (local_type, local_id, external_service, external_key, status, next_attempt_at, created_at, updated_at)
				VALUES ('order', ?, 'crm', ?, ?, ?, ?, ?)`, id, "k"+id, status, now, now, now).Error
		}
		require.NoError(t, link("1", "deleted"))
		require.Error(t, link("2", "gone"), "a status the CHECK does not name is refused")
		disc := func(kind string) error {
			return db.Exec(`INSERT INTO discrepancies (run_id, kind, status, local_type, local_id, external_key, external_ids, detail, created_at)
				VALUES (1, ?, 'reported', 'order', '1', 'k1', '', '', ?)`, kind, now).Error
		}
		require.NoError(t, db.Exec(`INSERT INTO reconciliation_runs (id, service, status, started_at) VALUES (1, 'crm', 'completed', ?)`, now).Error)
		require.NoError(t, disc("deleted_but_present"))
		require.NoError(t, disc("never_synced"))
		require.Error(t, disc("lost"))
		require.NoError(t, db.Exec(`UPDATE records SET deleted_at = ? WHERE id = 0`, now).Error)
	})
}
