package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// countingEffect is a payments effect that counts its runs by event id.
func countingEffect(mu *sync.Mutex, runs map[string]int) Effect {
	return func(_ context.Context, _ *gorm.DB, ev Event, _ time.Time) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		runs[ev.ID]++
		return "counted", nil
	}
}

func TestConcurrentResendsApplyEachEffectOnceAndCountEveryDuplicate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		var mu sync.Mutex
		runs := map[string]int{}
		e.rc.Handle("payments", "payment.succeeded", countingEffect(&mu, runs))
		const events, sends = 8, 24
		type answer struct {
			res Result
			err error
		}
		answers := make(chan answer, events*sends)
		start := make(chan struct{})
		ignored := map[string]bool{}
		var wg sync.WaitGroup
		for ev := range events {
			typ := "payment.succeeded"
			if ev%4 == 3 {
				typ = "payment.unheard_of" // no effect: stored with its outcome in the insert
				ignored[fmt.Sprintf("evt_many_%d", ev)] = true
			}
			body := paymentEvent(fmt.Sprintf("evt_many_%d", ev), typ, "1")
			for range sends {
				wg.Go(func() {
					<-start
					res, err := e.deliver("payments", body)
					answers <- answer{res, err}
				})
			}
		}
		close(start)
		wg.Wait()
		close(answers)
		firsts := map[string]int{}
		for a := range answers {
			require.NoError(t, a.err)
			want := models.EventApplied
			if ignored[a.res.EventID] {
				want = models.EventIgnored
			}
			require.Equal(t, want, a.res.Outcome, "%s: every answer, duplicate or not, gives the first outcome", a.res.EventID)
			if !a.res.Duplicate {
				firsts[a.res.EventID]++
			}
		}
		require.NoError(t, e.rc.Flush(context.Background()))
		for ev := range events {
			id := fmt.Sprintf("evt_many_%d", ev)
			require.Equal(t, 1, firsts[id], "%s is new in exactly one answer", id)
			stored, err := models.EventByID(db, "payments", id)
			require.NoError(t, err)
			require.Equal(t, sends-1, stored.Duplicates, "%s: every re-send counted", id)
			if ev%4 == 3 {
				require.Equal(t, models.EventIgnored, stored.Outcome)
				require.Contains(t, stored.Error, "no effect for events of type")
				continue
			}
			require.Equal(t, 1, runs[id], "%s: its effect ran once", id)
			require.Equal(t, models.EventApplied, stored.Outcome)
		}
	})
}

func TestADuplicateIsAnsweredFromAReadWhileAWriterHoldsTheEvent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		body := paymentEvent("evt_read", "payment.succeeded", "1")
		_, err := e.deliver("payments", body)
		require.NoError(t, err)

		// Another writer holds the event's row (Postgres) or the database's
		// write lock (SQLite): a re-send that wrote would wait for it.
		tx := db.Begin()
		require.NoError(t, tx.Exec("UPDATE processed_events SET error = error WHERE event_id = ?", "evt_read").Error)
		defer tx.Rollback()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		a, err := e.rc.Receive(ctx, "payments", Delivery{Method: "POST", URL: "http://127.0.0.1/hooks/payments",
			Header: stripeSign(body, e.clock.Now()), Body: []byte(body)})
		require.NoError(t, err, "a re-send needs no write")
		require.True(t, a.Events[0].Duplicate)
		require.Equal(t, models.EventApplied, a.Events[0].Outcome)
	})
}

func TestTheDuplicateCountIsWrittenWithinItsBoundAndSurvivesARestart(t *testing.T) {
	for name, url := range map[string]func(testing.TB) string{models.SQLite: dbtest.SQLitePath, models.Postgres: dbtest.PostgresURL} {
		t.Run(name, func(t *testing.T) {
			v := url(t)
			db := dbtest.Open(t, v)
			e := setup(t, db)
			body := paymentEvent("evt_count", "payment.unheard_of", "1")
			for range 4 {
				_, err := e.deliver("payments", body)
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool {
				ev, err := models.EventByID(db, "payments", "evt_count")
				return err == nil && ev.Duplicates == 3
			}, duplicateWriteEvery+2*time.Second, 50*time.Millisecond, "written by the schedule, within its bound")

			for range 5 {
				_, err := e.deliver("payments", body)
				require.NoError(t, err)
			}
			require.NoError(t, e.rc.Close(context.Background()))
			require.NoError(t, models.Close(db))

			db = dbtest.Open(t, v)
			ev, err := models.EventByID(db, "payments", "evt_count")
			require.NoError(t, err)
			require.Equal(t, 8, ev.Duplicates, "Close wrote what the schedule had not")
			require.Equal(t, e.clock.Now(), ev.LastDuplicateAt.UTC())
		})
	}
}

// queued waits until n deliveries wait in c's queue.
func queued(t *testing.T, c *committer, n int) {
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.queue) == n
	}, 10*time.Second, time.Millisecond)
}

// grouped sends one delivery per body at once while the writer's turn is
// held, so that they all queue for one group, then lets the group run; it
// returns each delivery's error, in order.
func grouped(t *testing.T, e *env, bodies []string) []error {
	e.rc.writer <- struct{}{}
	errs := make([]error, len(bodies))
	var wg sync.WaitGroup
	for i, body := range bodies {
		wg.Go(func() { _, errs[i] = e.deliver("payments", body) })
	}
	queued(t, e.rc.group, len(bodies))
	<-e.rc.writer
	wg.Wait()
	return errs
}

func TestOneFailingEffectRollsBackOnlyItsOwnDeliveryInAGroup(t *testing.T) {
	e := setup(t, dbtest.SQLite(t))
	var commits atomic.Int32
	commit := e.rc.group.commit
	e.rc.group.commit = func(tx *gorm.DB) error { commits.Add(1); return commit(tx) }
	e.rc.Handle("payments", "payment.exploded", func(_ context.Context, tx *gorm.DB, _ Event, now time.Time) (string, error) {
		// written, then taken back with the delivery
		if err := tx.Create(&models.Record{LocalType: "order", LocalID: "boom", Payload: "{}", ContentHash: "h", CreatedAt: now, UpdatedAt: now}).Error; err != nil {
			return "", err
		}
		return "", errors.New("the effect's store is down")
	})
	var bodies []string
	for i := range 12 {
		e.payment(fmt.Sprint(i))
		bodies = append(bodies, paymentEvent(fmt.Sprintf("evt_g%d", i), "payment.succeeded", fmt.Sprint(i)))
	}
	bodies[5] = paymentEvent("evt_g5", "payment.exploded", "5")
	e.rc.Handle("payments", "payment.panicked", func(context.Context, *gorm.DB, Event, time.Time) (string, error) {
		panic("a bug in an effect")
	})
	bodies[8] = paymentEvent("evt_g8", "payment.panicked", "8")
	errs := grouped(t, e, bodies)
	require.EqualValues(t, 1, commits.Load(), "one commit for the group")
	for i, err := range errs {
		if i == 5 || i == 8 {
			require.ErrorContains(t, err, map[int]string{5: "the effect's store is down", 8: "panicked: a bug in an effect"}[i])
			continue
		}
		require.NoError(t, err, "delivery %d", i)
		require.Equal(t, "paid", e.status(fmt.Sprint(i)))
	}
	_, err := models.EventByID(e.db, "payments", "evt_g5")
	require.ErrorIs(t, err, models.ErrNotFound, "the failed delivery stored nothing")
	require.Equal(t, "pending", e.status("5"))
	_, err = models.RecordByKey(e.db, "order", "boom")
	require.ErrorIs(t, err, models.ErrNotFound, "its effect's writes rolled back")
	var stored int64
	require.NoError(t, e.db.Model(&models.ProcessedEvent{}).Count(&stored).Error)
	require.EqualValues(t, 10, stored)
}

func TestAGroupWhoseCommitFailsAcknowledgesNoneAndStoresNone(t *testing.T) {
	e := setup(t, dbtest.SQLite(t))
	e.rc.group.commit = func(tx *gorm.DB) error {
		assert.NoError(t, tx.Rollback().Error)
		return errors.New("disk I/O error")
	}
	var bodies []string
	for i := range 10 {
		e.payment(fmt.Sprint(i))
		bodies = append(bodies, paymentEvent(fmt.Sprintf("evt_c%d", i), "payment.succeeded", fmt.Sprint(i)))
	}
	for i, err := range grouped(t, e, bodies) {
		require.ErrorContains(t, err, "disk I/O error", "delivery %d", i)
		require.Equal(t, "pending", e.status(fmt.Sprint(i)))
	}
	var stored int64
	require.NoError(t, e.db.Model(&models.ProcessedEvent{}).Count(&stored).Error)
	require.Zero(t, stored)
}

func TestACrashBetweenTheSharedCommitAndTheAnswersAnswersNothing(t *testing.T) {
	e := setup(t, dbtest.SQLite(t))
	var answered atomic.Int32
	crash := make(chan struct{})
	commit := e.rc.group.commit
	e.rc.group.commit = func(tx *gorm.DB) error {
		assert.Zero(t, answered.Load(), "nothing answered before the commit")
		err := commit(tx)
		<-crash // the process dies here: the commit is durable, no answer went out
		return err
	}
	var wg sync.WaitGroup
	e.rc.writer <- struct{}{}
	for i := range 6 {
		e.payment(fmt.Sprint(i))
		wg.Go(func() {
			_, err := e.deliver("payments", paymentEvent(fmt.Sprintf("evt_k%d", i), "payment.succeeded", fmt.Sprint(i)))
			assert.NoError(t, err)
			answered.Add(1)
		})
	}
	queued(t, e.rc.group, 6)
	<-e.rc.writer
	time.Sleep(100 * time.Millisecond)
	require.Zero(t, answered.Load(), "nothing answered while the group commits")

	// The provider re-sends to the restarted receiver: all duplicates.
	after := setup(t, e.db)
	for i := range 6 {
		res, err := after.deliver("payments", paymentEvent(fmt.Sprintf("evt_k%d", i), "payment.succeeded", fmt.Sprint(i)))
		require.NoError(t, err)
		require.True(t, res.Duplicate, "delivery %d", i)
		require.Equal(t, "paid", e.status(fmt.Sprint(i)))
	}
	close(crash)
	wg.Wait()
}

func TestADeliveryCancelledWhileQueuedDoesNotRun(t *testing.T) {
	e := setup(t, dbtest.SQLite(t))
	e.payment("1")
	body := paymentEvent("evt_gone", "payment.succeeded", "1")
	ctx, cancel := context.WithCancel(context.Background())
	e.rc.writer <- struct{}{}
	done := make(chan error, 1)
	go func() {
		_, err := e.rc.Receive(ctx, "payments", Delivery{Method: "POST", URL: "http://127.0.0.1/hooks/payments",
			Header: stripeSign(body, e.clock.Now()), Body: []byte(body)})
		done <- err
	}()
	queued(t, e.rc.group, 1)
	cancel()
	<-e.rc.writer
	require.ErrorIs(t, <-done, context.Canceled)
	require.Equal(t, "pending", e.status("1"))
	_, err := models.EventByID(e.db, "payments", "evt_gone")
	require.ErrorIs(t, err, models.ErrNotFound)
}
