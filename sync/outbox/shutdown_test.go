package outbox

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// waitForSends blocks until the provider has seen n requests.
func waitForSends(t *testing.T, p *sandbox.Provider, n int) {
	require.Eventually(t, func() bool { return p.Requests().Total >= n }, 10*time.Second, 5*time.Millisecond)
}

func countStatus(t *testing.T, db *gorm.DB, s models.Status) int64 {
	var n int64
	require.NoError(t, db.Model(&models.Link{}).Where("status = ?", s).Count(&n).Error)
	return n
}

// A stop lets sends in flight finish within the grace period and hands the
// leases of claimed-but-unsent links straight back: nothing waits for a
// lease to expire, nothing is left processing.
func TestStopFinishesInFlightSendsAndHandsBackTheRest(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crm.SetOptions(sandbox.Options{Latency: 300 * time.Millisecond})
		eng := e.engine(db, Options{Concurrency: 4, BatchSize: 8})
		for i := range 20 {
			typ, id, body := order(i)
			_, err := eng.Upsert(context.Background(), typ, id, []byte(body))
			require.NoError(t, err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- eng.Run(ctx, 5*time.Second) }()
		waitForSends(t, e.crm, 4)
		stop()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return within the grace period")
		}
		require.Zero(t, countStatus(t, db, models.StatusProcessing), "no link left under a lease")
		sent := countStatus(t, db, models.StatusSuccess)
		require.GreaterOrEqual(t, sent, int64(4), "sends in flight were allowed to finish")
		require.Equal(t, int64(20)-sent, countStatus(t, db, models.StatusNew), "the rest are back in the queue, as they were")
		var rows int64
		db.Model(&models.InProgress{}).Count(&rows)
		require.Zero(t, rows)
		var attempts int64
		db.Model(&models.Attempt{}).Count(&attempts)
		require.Equal(t, sent, attempts, "handed-back links were never sent and have no attempt")
	})
}

// Sends that outlast the grace period are cancelled: their attempt is logged
// as ambiguous and the link retries with a lookup first.
func TestStopCancelsSendsThatOutlastTheGrace(t *testing.T) {
	db := dbtest.SQLite(t)
	e := setup(t, db)
	e.crm.SetOptions(sandbox.Options{Latency: 3 * time.Second})
	e.svcs[0].Config.Timeout = 10 * time.Second
	eng := e.engine(db, Options{Concurrency: 2})
	e.upsert(order(1))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx, 200*time.Millisecond) }()
	waitForSends(t, e.crm, 1)
	start := time.Now()
	stop()
	require.NoError(t, <-done)
	require.Less(t, time.Since(start), 2*time.Second)
	l := e.link("order", "1", "crm")
	require.Equal(t, models.StatusRetry, l.Status)
	require.True(t, l.NeedsLookup, "the cancelled create may have reached the provider")
	as := e.attempts(l.ID)
	require.Len(t, as, 1)
	require.Equal(t, models.OutcomeAmbiguous, as[0].Outcome)
	require.Contains(t, as[0].Error, "cancelled while sending")
}

// A link that waits in an engine's queue behind slow sends until its lease
// has run out is handed back unsent: by then a rescuer may have given it to
// another worker, and a second send would make a second remote object.
func TestALinkWhoseLeaseRanOutInTheQueueIsNotSent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crm.SetOptions(sandbox.Options{Latency: 300 * time.Millisecond})
		a := e.engine(db, Options{Concurrency: 1, BatchSize: 2, WorkerID: "A"})
		b := e.engine(db, Options{Concurrency: 8, WorkerID: "B"})
		for i := 1; i <= 3; i++ {
			e.upsert(order(i))
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, 5*time.Second) }()
		waitForSends(t, e.crm, 1) // A: link 1 in flight, links 2 and 3 claimed and queued
		require.Eventually(t, func() bool { return countStatus(t, db, models.StatusProcessing) == 3 }, 5*time.Second, time.Millisecond)

		// The queue waits past the lease (a provider slower than usual), and
		// B rescues and sends all three.
		e.clock.Advance(a.opts.Lease + time.Second)
		n, err := b.Rescue(context.Background())
		require.NoError(t, err)
		require.Equal(t, 3, n)
		require.NoError(t, b.Drain(context.Background()))
		require.Eventually(t, func() bool { return countStatus(t, db, models.StatusSuccess) == 3 }, 10*time.Second, 10*time.Millisecond)
		stop()
		require.NoError(t, <-done)

		for _, key := range []string{"site_order_2", "site_order_3"} {
			require.Equal(t, 1, e.crm.CountByKey(key), key)
		}
		require.Contains(t, e.logBuf.String(), "lease ran short while the link waited for a sender")
	})
}

// A stop that cuts a send short says nothing about the provider: it does
// not use up the link's last attempt, and the link goes back to the queue,
// to be looked up first.
func TestOurOwnStopDoesNotUseUpALinksAttempts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crm.SetOptions(sandbox.Options{Latency: 3 * time.Second})
		e.svcs[0].Config.Timeout = 10 * time.Second
		eng := e.engine(db, Options{Concurrency: 2})
		e.upsert(order(1))
		require.NoError(t, db.Model(&models.Link{}).Where("local_id = ?", "1").Update("attempts", 5).Error) // 5 of 6 used
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- eng.Run(ctx, 200*time.Millisecond) }()
		waitForSends(t, e.crm, 1)
		stop()
		require.NoError(t, <-done)
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusRetry, l.Status, l.LastError)
		require.True(t, l.NeedsLookup, "the cut request may have arrived")
		require.Contains(t, l.LastError, "syncdesk was stopping")
	})
}

// A Sync now whose send our own stop cuts short is not answered by it: the
// request stays, and the link goes again, for the next send to answer it.
func TestASyncNowWhoseSendAStopCutsShortStaysAsked(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.upsert(order(1))
		e.settle(e.eng)
		l := e.link("order", "1", "crm")
		e.crm.SetOptions(sandbox.Options{Latency: 10 * time.Second})
		_, err := e.eng.SyncNow(context.Background(), l.ID, "ana")
		require.NoError(t, err)

		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.eng.Run(ctx, 10*time.Millisecond) }()
		waitForSends(t, e.crm, 2) // the create, then the update asked for, in flight
		stop()
		require.NoError(t, <-done)

		require.Equal(t, models.StatusRetry, e.link("order", "1", "crm").Status, "cut short, the link goes again")
		var rows []models.InProgress
		require.NoError(t, db.Find(&rows).Error)
		require.Len(t, rows, 1, "ana's request waits for a send that is not cut short")
		require.Equal(t, "ana", rows[0].StartedBy)
	})
}

// heldGate holds every call until its context ends: a service whose rate
// limit says wait.
type heldGate struct{ waiting chan struct{} }

func (heldGate) Hold(time.Duration, string) {}

func (heldGate) HeldFor() time.Duration { return 0 } // a pace's wait: the service is not held

func (g heldGate) Wait(ctx context.Context) (func(*http.Response), error) {
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A send our stop cut short while it waited for the service's rate limit
// never left: it is no attempt (nothing is logged, and the link keeps its
// attempts) and no failure of the provider's, and the link goes again at
// once on the next engine.
func TestAStopDuringTheRateLimitsWaitIsNoAttempt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		gate := heldGate{waiting: make(chan struct{}, 1)}
		e.svcs[0].Conn = connector.NewHTTP("crm", e.svcs[0].Config, e.redactr, nil).WithGate(gate)
		eng := e.engine(db, Options{Concurrency: 1, Grace: 50 * time.Millisecond})
		e.upsert("order", "1", `{"title":"Order 1","total":"11.00"}`)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- eng.Drain(ctx) }()
		<-gate.waiting
		stop()
		require.NoError(t, <-done)

		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusNew, l.Status, l.LastError)
		require.Zero(t, l.Attempts)
		require.Empty(t, l.LastError)
		require.Empty(t, e.attempts(l.ID), "no call was made")
		require.Zero(t, e.crm.Requests().Total)
	})
}

// blockedGate is a service whose provider holds every call for an hour (a
// spent daily allowance): a call waits until its context ends.
type blockedGate struct{ heldGate }

func (blockedGate) HeldFor() time.Duration { return time.Hour }

// A service whose every call is held is not claimed from: its links would
// only wait in the senders, and with a backlog they would keep every sender
// from the other services for the whole hold. The other service's links go
// at once; the held one's wait, untouched, for the hold to end.
func TestAHeldServiceKeepsNoSenderFromTheOthers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		gate := blockedGate{heldGate{waiting: make(chan struct{}, 1)}}
		e.svcs[0].Conn = connector.NewHTTP("crm", e.svcs[0].Config, e.redactr, nil).WithGate(gate)
		eng := e.engine(db, Options{Concurrency: 2})
		for i := 1; i <= 6; i++ {
			e.upsert(order(i))
			e.upsert(payment(i))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, eng.Drain(ctx))
		require.NoError(t, ctx.Err(), "the drain did not wait on the held service")
		for i := 1; i <= 6; i++ {
			require.Equal(t, models.StatusSuccess, e.link("payment", fmt.Sprint(i), "payments").Status)
			l := e.link("order", fmt.Sprint(i), "crm")
			require.Equal(t, models.StatusNew, l.Status, "not claimed while crm is held")
			require.Zero(t, l.Attempts)
		}
		select {
		case <-gate.waiting:
			t.Fatal("a crm call waited in a sender")
		default:
		}
		require.Zero(t, e.crm.Requests().Total)
	})
}
