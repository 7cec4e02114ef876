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

func (pacedGate) Hold(time.Duration, string) {}

func (pacedGate) HeldFor() time.Duration { return 0 } // paced, not held

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
		go func() { done <- a.Run(ctx, time.Minute) }()
		<-gate.waiting
		stop() // A claims no more; its stop waits for the call that waits

		// A's renewals failed meanwhile (its database was out, say), and
		// the lease ran out: a rescuer hands the link back, and B sends it.
		e.clock.Advance(a.opts.Lease + time.Second)
		e.svcs[0].Conn = connector.NewHTTP("crm", e.svcs[0].Config, e.redactr, nil)
		b := e.engine(db, Options{WorkerID: "B"})
		n, err := b.Rescue(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.NoError(t, b.Drain(context.Background()))
		require.Equal(t, models.StatusSuccess, e.link("order", "1", "crm").Status)

		close(gate.turn) // A's turn comes
		require.NoError(t, <-done)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"), "A did not create the object again")
		for _, at := range e.attempts(l.ID) {
			require.NotEqual(t, "A", at.Worker, "A made no call: %+v", at)
		}
		require.Contains(t, e.logBuf.String(), "lease ran out while a call waited; not sent")
	})
}

// A link whose lease ran out and that the same pipe claimed again is held
// twice for a moment: a renewal of the new claim's lease does not pass for
// one of the old, whose call must not go.
func TestARenewalKeepsOnlyTheLeaseItRenewed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.upsert(order(1))
		l := e.link("order", "1", "crm")
		now := e.clock.Now()
		first, err := models.ClaimDue(db, "A/1", now, e.eng.opts.Lease, 10, nil)
		require.NoError(t, err)
		require.Len(t, first, 1)
		late := now.Add(e.eng.opts.Lease + time.Second)
		expired, err := models.ExpiredLeases(db, late, 10)
		require.NoError(t, err)
		released, err := models.ReleaseExpired(db, expired[0], models.Attempt{LinkID: l.ID, Operation: "lease.expired",
			Outcome: models.OutcomeAmbiguous, CreatedAt: late}, late)
		require.NoError(t, err)
		require.True(t, released)
		second, err := models.ClaimDue(db, "A/2", late, e.eng.opts.Lease, 10, nil)
		require.NoError(t, err)
		require.Len(t, second, 1)

		p := &pipe{e: e.eng, held: map[*heldLease]struct{}{}}
		old := p.hold(job{link: first[0].Link}, now)
		current := p.hold(job{link: second[0].Link}, late)
		require.NoError(t, p.renew(context.Background(), []*heldLease{old, current}, late))
		require.True(t, old.lost, "the first claim's lease is gone")
		require.False(t, current.lost)
		require.ErrorIs(t, p.ready(context.Background(), old), errLeaseLost)
		require.NoError(t, p.ready(context.Background(), current))
	})
}

// The keeper renews a lease that is short, not one with half a lease left,
// nor one lost, nor one of a send in its sender for keepFor: that send is
// taken for hung, and its link left to the rescuer.
func TestTheKeeperRenewsShortLeasesOfSendsThatAreNotHung(t *testing.T) {
	e := setup(t, dbtest.SQLite(t))
	p := &pipe{e: e.eng, held: map[*heldLease]struct{}{}}
	now, lease := e.clock.Now(), e.eng.opts.Lease
	at := func(id int64, since time.Time, left time.Duration) *heldLease {
		until := now.Add(left)
		return p.hold(job{link: models.Link{ID: id, LeaseOwner: "A/1", ExternalService: "crm", LockedUntil: &until}}, since)
	}
	short := at(1, now.Add(-time.Minute), lease/3)
	at(2, now.Add(-time.Minute), lease*2/3)
	at(3, now.Add(-keepFor-time.Second), lease/3)
	lost := at(4, now.Add(-time.Minute), lease/3)
	lost.lost = true
	require.Equal(t, []*heldLease{short}, p.toRenew(now))
}
