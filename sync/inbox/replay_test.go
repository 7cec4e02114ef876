package inbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

func (e *env) replays(id string) []models.EventReplay {
	e.t.Helper()
	rs, total, err := models.EventReplays(e.db, "payments", id, 1000)
	require.NoError(e.t, err)
	require.EqualValues(e.t, len(rs), total)
	return rs
}

// A payment applied, then replayed twice: the event still says what its
// first delivery did; each replay's own outcome, note, time and replayer
// are in the history, newest first.
func TestReplayKeepsTheFirstOutcome(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		_, err := e.deliver("payments", paymentEvent("evt_r", "payment.succeeded", "1"))
		require.NoError(t, err)
		first, err := models.EventByID(db, "payments", "evt_r")
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, first.Outcome)

		e.clock.Advance(time.Hour)
		res, err := e.rc.Replay(context.Background(), "payments", "evt_r", "olga@example.com")
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome)
		e.clock.Advance(time.Minute)
		_, err = e.rc.Replay(context.Background(), "payments", "evt_r", "api:shop")
		require.NoError(t, err)

		ev, err := models.EventByID(db, "payments", "evt_r")
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, ev.Outcome, "the event keeps its first outcome")
		require.Equal(t, first.Error, ev.Error, "and its first note")
		require.NotContains(t, ev.Error, "replayed")

		rs := e.replays("evt_r")
		require.Len(t, rs, 2)
		require.Equal(t, "api:shop", rs[0].ReplayedBy, "newest first")
		require.Equal(t, "olga@example.com", rs[1].ReplayedBy)
		require.Equal(t, e.clock.Now(), rs[0].ReplayedAt.UTC())
		require.Equal(t, e.clock.Now().Add(-time.Minute), rs[1].ReplayedAt.UTC())
		for _, r := range rs {
			require.Equal(t, models.EventIgnored, r.Outcome)
			require.Contains(t, r.Note, `is already "paid"`)
		}
		require.Equal(t, "paid", e.status("1"))
	})
}

// A replay whose effect errors is rolled back whole: no history row.
func TestAReplayThatErrorsLeavesNoRow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		_, err := e.deliver("payments", paymentEvent("evt_x", "payment.succeeded", "1"))
		require.NoError(t, err)
		e.rc.Handle("payments", "payment.succeeded", func(context.Context, *gorm.DB, Event, time.Time) (string, error) {
			return "", errors.New("ledger unavailable")
		})
		_, err = e.rc.Replay(context.Background(), "payments", "evt_x", "olga@example.com")
		require.ErrorContains(t, err, "ledger unavailable")
		require.Empty(t, e.replays("evt_x"))
	})
}

// Dozens of operators replaying one event at once: every replay commits its
// own row, none is lost or merged, and the event's first outcome stands.
func TestConcurrentReplaysEachLeaveARow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		_, err := e.deliver("payments", paymentEvent("evt_c", "payment.succeeded", "1"))
		require.NoError(t, err)

		const n = 40
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				res, err := e.rc.Replay(context.Background(), "payments", "evt_c", fmt.Sprintf("op%02d@example.com", i))
				if err == nil && res.Outcome != models.EventIgnored {
					err = fmt.Errorf("replay %d: outcome %s, want ignored", i, res.Outcome)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}

		rs := e.replays("evt_c")
		var by, want []string
		for i, r := range rs {
			by = append(by, r.ReplayedBy)
			want = append(want, fmt.Sprintf("op%02d@example.com", i))
		}
		sort.Strings(by)
		require.Equal(t, want, by, "one row per replay")
		ev, err := models.EventByID(db, "payments", "evt_c")
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, ev.Outcome)
		require.Equal(t, "paid", e.status("1"))
	})
}

// Pruning an event takes its replays with it; a kept event keeps them.
func TestPruneTakesReplaysWithTheirEvents(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		_, err := e.deliver("payments", paymentEvent("evt_old", "payment.succeeded", "1"))
		require.NoError(t, err)
		_, err = e.rc.Replay(context.Background(), "payments", "evt_old", "olga@example.com")
		require.NoError(t, err)
		e.clock.Advance(20 * 24 * time.Hour)
		_, err = e.deliver("payments", paymentEvent("evt_new", "payment.succeeded", "1"))
		require.NoError(t, err)
		_, err = e.rc.Replay(context.Background(), "payments", "evt_new", "olga@example.com")
		require.NoError(t, err)
		e.clock.Advance(11 * 24 * time.Hour)

		n, err := e.rc.Prune(context.Background(), 30*24*time.Hour)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		var left []models.EventReplay
		require.NoError(t, db.Find(&left).Error)
		require.Len(t, left, 1)
		require.Equal(t, "evt_new", left[0].EventID)
	})
}
