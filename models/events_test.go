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
