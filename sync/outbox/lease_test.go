package outbox

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// pacedGate holds each call, as a service's rate limit does when its turn
// is far off, until the test lets the calls go.
type pacedGate struct {
	waiting chan struct{}
	turn    chan struct{} // closed: every call goes
}

func newPacedGate() pacedGate {
	return pacedGate{waiting: make(chan struct{}, 1), turn: make(chan struct{})}
}

func (g pacedGate) Wait(ctx context.Context) (func(*http.Response), error) {
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	select {
	case <-g.turn:
		return func(*http.Response) {}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pacedEngine is an engine whose CRM calls wait on gate.
func (e *env) pacedEngine(db *gorm.DB, gate pacedGate, worker string) *Engine {
	e.svcs[0].Conn = connector.NewHTTP("crm", e.svcs[0].Config, e.redactr, nil).WithGate(gate)
	return e.engine(db, Options{Concurrency: 2, WorkerID: worker})
}

// lockedUntil reads a link's lease.
func lockedUntil(t *testing.T, db *gorm.DB, id int64) time.Time {
	t.Helper()
	var l models.Link
	require.NoError(t, db.First(&l, id).Error)
	if l.LockedUntil == nil {
		return time.Time{}
	}
	return *l.LockedUntil
}

// A call may wait for the service's rate limit far longer than the lease
// its link was claimed with (a backlog at a slow rate, a Retry-After of
// minutes). Its engine renews the lease while it waits, so no rescuer hands
// the link to another worker, and the link is sent once: no lost attempt in
// the log, no second create.
func TestALinkWaitingForTheRateLimitKeepsItsLease(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		gate := newPacedGate()
		a := e.pacedEngine(db, gate, "A")
		rescuer := e.engine(db, Options{WorkerID: "B"})
		e.upsert(order(1))
		l := e.link("order", "1", "crm")

		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, 5*time.Second) }()
		<-gate.waiting
		claimedUntil := lockedUntil(t, db, l.ID)

		// Past half the lease, the engine renews it at its next look
		// (leaseCheck, on the wall clock).
		e.clock.Advance(a.opts.Lease * 6 / 10)
		require.Eventually(t, func() bool { return lockedUntil(t, db, l.ID).After(claimedUntil) },
			leaseCheck+5*time.Second, 20*time.Millisecond, "the lease of a waiting link is renewed")

		e.clock.Advance(a.opts.Lease * 6 / 10) // past the lease it was claimed with
		n, err := rescuer.Rescue(context.Background())
		require.NoError(t, err)
		require.Zero(t, n, "a renewed lease is not rescued")

		close(gate.turn)
		require.Eventually(t, func() bool { return e.link("order", "1", "crm").Status == models.StatusSuccess },
			10*time.Second, 10*time.Millisecond)
		stop()
		require.NoError(t, <-done)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"))
		as := e.attempts(l.ID)
		require.Len(t, as, 1, "one create, and no lost attempt")
		require.Equal(t, "deal.create", as[0].Operation)
	})
}

// A call that waited so long that another worker took its link over is
// not sent: the other worker's send is the link's, and a second create
// would make a second object.
func TestACallWhoseLinkWasTakenOverWhileItWaitedIsNotSent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		gate := newPacedGate()
		a := e.pacedEngine(db, gate, "A")
		e.upsert(order(1))
		l := e.link("order", "1", "crm")

		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, 5*time.Second) }()
		<-gate.waiting

		// A's renewals failed meanwhile (its database was out, say), and
		// the lease ran out: a rescuer hands the link back, and B sends it.
		e.clock.Advance(a.opts.Lease + time.Second)
		e.svcs[0].Conn = connector.NewHTTP("crm", e.svcs[0].Config, e.redactr, nil)
		b := e.engine(db, Options{WorkerID: "B"})
		n, err := b.Rescue(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, n, "A's keeper renewed the lease before the test could let it run out")
		require.NoError(t, b.Drain(context.Background()))
		require.Equal(t, models.StatusSuccess, e.link("order", "1", "crm").Status)

		close(gate.turn) // A's turn comes; its stop waits for the call
		stop()
		require.NoError(t, <-done)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"), "A did not create the object again")
		for _, at := range e.attempts(l.ID) {
			require.NotEqual(t, "A", at.Worker, "A made no call: %+v", at)
		}
		require.Contains(t, e.logBuf.String(), "another worker has the link now")
	})
}
