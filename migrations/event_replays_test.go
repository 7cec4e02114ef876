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

// Before 0019 a replay overwrote the event's note with "replayed: …" and its
// outcome with the replay's; after it, such an event's note says that its
// first outcome is not known, and other notes are left alone.
func TestEventReplaysMigrationOwnsUpToLostFirstOutcomes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		// Back to version 18: 0019 is the newest, and nothing else depends on its table.
		require.NoError(t, db.Exec("DROP TABLE event_replays").Error)
		require.NoError(t, db.Exec("DELETE FROM schema_migrations WHERE version = 19").Error)
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		for id, note := range map[string]string{"evt_replayed": "replayed: payment pay_1 is already \"paid\"", "evt_once": "payment pay_2 marked paid"} {
			ok, err := models.RecordEvent(db, models.ProcessedEvent{Provider: "stripe", EventID: id, EventType: "payment.succeeded",
				ReceivedAt: now, Outcome: models.EventIgnored, Error: note, Payload: `{}`})
			require.NoError(t, err)
			require.True(t, ok)
		}

		n, err := migrations.Apply(db)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		ev, err := models.EventByID(db, "stripe", "evt_replayed")
		require.NoError(t, err)
		require.Equal(t, "Replayed before syncdesk kept a history of replays, so this is the last replay's outcome; "+
			"the first is not known. Its note: payment pay_1 is already \"paid\"", ev.Error)
		ev, err = models.EventByID(db, "stripe", "evt_once")
		require.NoError(t, err)
		require.Equal(t, "payment pay_2 marked paid", ev.Error)
		require.True(t, db.Migrator().HasTable("event_replays"))
	})
}
