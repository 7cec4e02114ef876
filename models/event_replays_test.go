package models_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

var replaysNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func storeEvent(t *testing.T, db *gorm.DB, provider, id string, at time.Time) {
	t.Helper()
	ok, err := models.RecordEvent(db, models.ProcessedEvent{Provider: provider, EventID: id, EventType: "payment.succeeded",
		ReceivedAt: at, Outcome: models.EventApplied, Error: "payment marked paid", Payload: `{}`})
	require.NoError(t, err)
	require.True(t, ok)
}

func replay(t *testing.T, db *gorm.DB, provider, id, by string, at time.Time) {
	t.Helper()
	require.NoError(t, models.RecordReplay(db, models.EventReplay{Provider: provider, EventID: id, ReplayedAt: at,
		ReplayedBy: by, Outcome: models.EventIgnored, Note: "replay by " + by}))
}

// An event's replays come newest first, ties in the same instant by the
// order they were written, and only that event's; past the limit the
// total still counts them all.
func TestEventReplaysNewestFirstAndCounted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		storeEvent(t, db, "stripe", "evt_1", replaysNow)
		storeEvent(t, db, "crm", "evt_1", replaysNow) // same id, another provider
		replay(t, db, "stripe", "evt_1", "olga@example.com", replaysNow.Add(time.Minute))
		replay(t, db, "stripe", "evt_1", "api:shop", replaysNow.Add(2*time.Minute))
		replay(t, db, "stripe", "evt_1", "otto@example.com", replaysNow.Add(2*time.Minute))
		replay(t, db, "crm", "evt_1", "carl@example.com", replaysNow.Add(3*time.Minute))

		got, total, err := models.EventReplays(db, "stripe", "evt_1", 50)
		require.NoError(t, err)
		require.EqualValues(t, 3, total)
		var by []string
		for _, r := range got {
			by = append(by, r.ReplayedBy)
			require.Equal(t, "replay by "+r.ReplayedBy, r.Note)
			require.Equal(t, models.EventIgnored, r.Outcome)
		}
		require.Equal(t, []string{"otto@example.com", "api:shop", "olga@example.com"}, by)
		require.True(t, got[0].ReplayedAt.Equal(replaysNow.Add(2*time.Minute)), "replayed at %v", got[0].ReplayedAt)

		got, total, err = models.EventReplays(db, "stripe", "evt_1", 2)
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.EqualValues(t, 3, total, "the total counts the replays past the limit")

		got, total, err = models.EventReplays(db, "stripe", "evt_never", 50)
		require.NoError(t, err)
		require.Empty(t, got)
		require.Zero(t, total)
	})
}

// A replay of an event that is not stored (pruned since it was read) is
// refused by the foreign key, as not found.
func TestRecordReplayOfAMissingEventIsNotFound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		err := models.RecordReplay(db, models.EventReplay{Provider: "stripe", EventID: "evt_gone", ReplayedAt: replaysNow,
			ReplayedBy: "olga@example.com", Outcome: models.EventApplied})
		require.ErrorIs(t, err, models.ErrNotFound)
		var n int64
		require.NoError(t, db.Model(&models.EventReplay{}).Count(&n).Error)
		require.Zero(t, n)
	})
}

// Pruning in batches takes each pruned event's replays with it and leaves
// the replays of the events it keeps.
func TestPruneEventsTakesTheirReplays(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		old := replaysNow.Add(-40 * 24 * time.Hour)
		for i := range 5 {
			id := fmt.Sprintf("evt_old%d", i)
			storeEvent(t, db, "stripe", id, old.Add(time.Duration(i)*time.Second))
			replay(t, db, "stripe", id, "olga@example.com", replaysNow)
			replay(t, db, "stripe", id, "api:shop", replaysNow)
		}
		storeEvent(t, db, "stripe", "evt_new", replaysNow)
		replay(t, db, "stripe", "evt_new", "olga@example.com", replaysNow)

		before := replaysNow.Add(-30 * 24 * time.Hour)
		var rounds []int64
		for {
			n, err := models.PruneEvents(db, before, 2)
			require.NoError(t, err)
			rounds = append(rounds, n)
			if n < 2 {
				break
			}
		}
		require.Equal(t, []int64{2, 2, 1}, rounds, "batches of two events")

		var left []models.EventReplay
		require.NoError(t, db.Order("id").Find(&left).Error)
		require.Len(t, left, 1, "the pruned events' replays went with them")
		require.Equal(t, "evt_new", left[0].EventID)
	})
}
