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

// Re-sends counted in memory land on their own events, each with its count
// and the time of its last re-send to the microsecond, whatever characters
// the ids hold; a count for an event no longer stored comes back unwritten.
// More counts than one statement takes are written in several.
func TestAddDuplicatesWritesEachCountOnItsEvent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		at := time.Date(2026, 12, 7, 8, 15, 30, 123456000, time.UTC)
		ids := []string{`evt_"quoted"`, `evt_back\slash`, "evt_<&>", "evt_ünïcødé_✓", "evt_tab\there", "evt_😀"}
		for i := range 300 {
			ids = append(ids, fmt.Sprintf("evt_many_%03d", i))
		}
		var counts []models.DuplicateCount
		for i, id := range ids {
			inserted, err := models.RecordEvent(db, models.ProcessedEvent{Provider: "stripe", EventID: id, EventType: "payment.succeeded",
				ReceivedAt: at, Outcome: models.EventApplied, Payload: "{}"})
			require.NoError(t, err)
			require.True(t, inserted)
			counts = append(counts, models.DuplicateCount{Provider: "stripe", EventID: id, N: i + 1, At: at.Add(time.Duration(i) * time.Second)})
		}
		gone := models.DuplicateCount{Provider: "stripe", EventID: "evt_pruned", N: 4, At: at}
		left, err := models.AddDuplicates(db, append(counts, gone))
		require.NoError(t, err)
		require.Equal(t, []models.DuplicateCount{gone}, left)
		for _, c := range counts {
			ev, err := models.EventByID(db, c.Provider, c.EventID)
			require.NoError(t, err)
			require.Equal(t, c.N, ev.Duplicates, "%q", c.EventID)
			require.NotNil(t, ev.LastDuplicateAt, "%q", c.EventID)
			require.True(t, c.At.Equal(*ev.LastDuplicateAt), "%q: last re-send at %s, want %s", c.EventID, ev.LastDuplicateAt, c.At)
		}
	})
}

// On Postgres a delivery that holds an event keeps a second one waiting
// until it commits, and the second then reads the event the first stored:
// the read is taken after the lock, not when the statement began. Another
// event is not held up meanwhile.
func TestHoldEventWaitsForTheHolderAndSeesWhatItStored(t *testing.T) {
	db := dbtest.Postgres(t)
	first := db.Begin()
	defer first.Rollback()
	_, stored, err := models.HoldEvent(first, "stripe", "evt_held")
	require.NoError(t, err)
	require.False(t, stored)

	type held struct {
		outcome string
		stored  bool
		err     error
	}
	second := make(chan held, 1)
	go func() {
		tx := db.Begin()
		defer tx.Rollback()
		outcome, stored, err := models.HoldEvent(tx, "stripe", "evt_held")
		second <- held{outcome, stored, err}
	}()
	other := db.Begin()
	_, stored, err = models.HoldEvent(other, "stripe", "evt_other")
	require.NoError(t, err, "another event is not held up")
	require.False(t, stored)
	require.NoError(t, other.Commit().Error)
	select {
	case h := <-second:
		t.Fatalf("the second delivery went on while the first held the event: %+v", h)
	case <-time.After(300 * time.Millisecond):
	}

	inserted, err := models.RecordEvent(first, models.ProcessedEvent{Provider: "stripe", EventID: "evt_held", EventType: "payment.succeeded",
		ReceivedAt: time.Now(), Outcome: models.EventFailed, Payload: "{}"})
	require.NoError(t, err)
	require.True(t, inserted)
	require.NoError(t, first.Commit().Error)
	select {
	case h := <-second:
		require.NoError(t, h.err)
		require.True(t, h.stored, "the second delivery sees the event the first stored")
		require.Equal(t, models.EventFailed, h.outcome)
	case <-time.After(10 * time.Second):
		t.Fatal("the second delivery still waits after the first committed")
	}
}

// On both databases HoldEvent says whether the event is stored, with its
// outcome.
func TestHoldEventReadsTheStoredOutcome(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		_, stored, err := models.HoldEvent(db, "stripe", "evt_1")
		require.NoError(t, err)
		require.False(t, stored)
		_, err = models.RecordEvent(db, models.ProcessedEvent{Provider: "stripe", EventID: "evt_1", EventType: "payment.succeeded",
			ReceivedAt: time.Now(), Outcome: models.EventIgnored, Payload: "{}"})
		require.NoError(t, err)
		outcome, stored, err := models.HoldEvent(db, "stripe", "evt_1")
		require.NoError(t, err)
		require.True(t, stored)
		require.Equal(t, models.EventIgnored, outcome)
		_, stored, err = models.HoldEvent(db, "crm", "evt_1")
		require.NoError(t, err)
		require.False(t, stored, "another service's event of the same id is another event")
	})
}
