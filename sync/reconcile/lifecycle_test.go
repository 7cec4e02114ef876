package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// stopDuring lists through the real connector and, on the nth page, cancels
// the run while that page's request is still in flight at the provider.
type stopDuring struct {
	Lister
	n      int
	cancel context.CancelFunc
	calls  atomic.Int32
}

func (s *stopDuring) List(ctx context.Context, localType, cursor string) (connector.Page, connector.Call) {
	if int(s.calls.Add(1)) == s.n {
		time.AfterFunc(20*time.Millisecond, s.cancel)
	}
	return s.Lister.List(ctx, localType, cursor)
}

// A run stopped during paging ends interrupted at once, leaves no scratch
// behind, and the next run starts clean and completes.
func TestStoppedRunEndsInterruptedAndTheNextCompletes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db, func(s *config.Service) {
			o := s.Objects["order"]
			o.List = "GET /deals?cursor={cursor}&limit=5"
			s.Objects["order"] = o
		})
		for n := 1; n <= 40; n++ {
			e.crm.Insert(map[string]any{"external_key": key(n), "title": fmt.Sprint("Order ", n)})
		}
		e.crm.SetOptions(sandbox.Options{Latency: 100 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rec := e.reconciler(&stopDuring{Lister: e.conn, n: 3, cancel: cancel}, Options{})

		e.clock.Advance(time.Second)
		run, err := rec.Run(ctx, "crm", RunOptions{})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, models.RunInterrupted, run.Status)
		require.NotNil(t, run.FinishedAt, "written at once, not left for a sweep")
		require.EqualValues(t, 10, run.Scanned, "two pages of five were listed before the stop")
		require.Contains(t, run.Error, "stopped before it finished")
		var scratch int64
		require.NoError(t, db.Model(&models.Seen{}).Count(&scratch).Error)
		require.Zero(t, scratch, "an interrupted run leaves no scratch rows")

		e.crm.SetOptions(sandbox.Options{})
		d := e.reconcile(RunOptions{})
		require.Equal(t, models.RunCompleted, d.Run.Status)
		require.EqualValues(t, 40, d.Run.Scanned)
		require.Equal(t, map[string]int64{discrepancy.UnlinkedRemote: 40}, totals(d), "objects of ours with no record: reported")
		require.Equal(t, models.KindCount{Reported: 40, Total: 40}, d.All)
	})
}

// A run whose instance crashed keeps the service busy until its heartbeat
// goes stale; then the next run (or Sweep) marks it interrupted and clears
// its scratch, and the new run starts clean.
func TestCrashedRunIsSweptByItsStaleHeartbeat(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		now := e.clock.Now()
		crashed := models.ReconciliationRun{Service: "crm", Owner: "dead-host", HeartbeatAt: &now, StartedAt: now}
		require.NoError(t, models.StartRun(db, &crashed))
		require.NoError(t, models.InsertSeen(db, []models.Seen{{RunID: crashed.ID, LocalType: "order", LocalID: "1",
			ExternalKey: key(1), ExternalID: "deal_1", Fields: "{}"}}))

		_, err := e.rec.Run(context.Background(), "crm", RunOptions{})
		require.ErrorIs(t, err, models.ErrRunActive, "a fresh heartbeat holds the service")

		e.clock.Advance(3 * time.Minute)
		d := e.reconcile(RunOptions{})
		require.Equal(t, models.RunCompleted, d.Run.Status)
		old, err := models.RunByID(db, crashed.ID)
		require.NoError(t, err)
		require.Equal(t, models.RunInterrupted, old.Status)
		require.Contains(t, old.Error, "no heartbeat")
		var scratch int64
		require.NoError(t, db.Model(&models.Seen{}).Count(&scratch).Error)
		require.Zero(t, scratch)

		again := models.ReconciliationRun{Service: "crm", Owner: "dead-host", HeartbeatAt: &now, StartedAt: now}
		require.NoError(t, models.StartRun(db, &again))
		n, err := e.rec.Sweep(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "the scheduler's sweep finds it too")
	})
}

// However many instances start a run of one service at once, one runs.
func TestOneRunningRunPerService(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Now().UTC()
		var wg sync.WaitGroup
		var started, busy atomic.Int32
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := models.ReconciliationRun{Service: "crm", HeartbeatAt: &now, StartedAt: now}
				switch err := models.StartRun(db, &r); {
				case err == nil:
					started.Add(1)
				case errors.Is(err, models.ErrRunActive):
					busy.Add(1)
				default:
					t.Errorf("start: %v", err)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, started.Load())
		require.EqualValues(t, 7, busy.Load())
		other := models.ReconciliationRun{Service: "payments", HeartbeatAt: &now, StartedAt: now}
		require.NoError(t, models.StartRun(db, &other), "another service is not held")
	})
}

// RunDue runs a scheduled service whose period has passed, and only then;
// a manual service never.
func TestRunDueFollowsThePeriod(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db, func(s *config.Service) { s.Reconcile.Every = time.Hour })
		runs := func() int {
			list, err := models.ListRuns(db, models.RunFilter{Service: "crm"})
			require.NoError(t, err)
			return len(list)
		}
		require.NoError(t, e.rec.RunDue(context.Background()))
		require.Equal(t, 1, runs(), "never run: due")
		e.clock.Advance(30 * time.Minute)
		require.NoError(t, e.rec.RunDue(context.Background()))
		require.Equal(t, 1, runs(), "within the hour: not due")
		e.clock.Advance(31 * time.Minute)
		require.NoError(t, e.rec.RunDue(context.Background()))
		require.Equal(t, 2, runs())

		e.svc.Reconcile.Manual = true
		manual := New(db, []Service{{Name: "crm", Config: e.svc, Conn: e.conn}}, e.clock, e.log, Options{})
		e.clock.Advance(2 * time.Hour)
		require.NoError(t, manual.RunDue(context.Background()))
		require.Equal(t, 2, runs(), "manual: on demand only")
	})
}

// Start returns the run's id at once; Cancel stops it, and it ends interrupted.
func TestStartInTheBackgroundAndCancel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		for n := 1; n <= 30; n++ {
			e.crm.Insert(map[string]any{"external_key": key(n), "title": "x"})
		}
		e.crm.SetOptions(sandbox.Options{Latency: time.Second})
		id, err := e.rec.Start(context.Background(), "crm", RunOptions{TriggeredBy: "ops@example.com"})
		require.NoError(t, err)
		_, err = e.rec.Start(context.Background(), "crm", RunOptions{})
		require.ErrorIs(t, err, models.ErrRunActive)
		require.NoError(t, e.rec.Cancel(context.Background(), id))
		require.Eventually(t, func() bool {
			r, err := models.RunByID(db, id)
			return err == nil && r.Status == models.RunInterrupted
		}, 5*time.Second, 10*time.Millisecond)
		r, err := models.RunByID(db, id)
		require.NoError(t, err)
		require.Contains(t, r.Error, "stopped by an operator")
		var cancelErr error
		require.Eventually(t, func() bool { cancelErr = e.rec.Cancel(context.Background(), id); return cancelErr != nil },
			5*time.Second, 10*time.Millisecond, "no longer running here")
		var inv *models.InvalidError
		require.ErrorAs(t, cancelErr, &inv, "an ended run has nothing to cancel")
		require.Contains(t, inv.Reason, "not running (it is interrupted)")
		require.ErrorIs(t, e.rec.Cancel(context.Background(), id+100), models.ErrNotFound)

		// A run another instance is doing can be cancelled only there.
		now := e.clock.Now()
		elsewhere := models.ReconciliationRun{Service: "crm", Owner: "other-host-7", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &elsewhere))
		err = e.rec.Cancel(context.Background(), elsewhere.ID)
		require.ErrorIs(t, err, ErrRunElsewhere)
		require.Contains(t, err.Error(), "other-host-7")
	})
}

func TestUnknownAndUnlistableServicesCannotRun(t *testing.T) {
	db := dbtest.SQLite(t)
	e := setup(t, db)
	_, err := e.rec.Run(context.Background(), "nope", RunOptions{})
	require.ErrorIs(t, err, models.ErrNotFound)
	svc := e.svc
	o := svc.Objects["order"]
	o.List = ""
	svc.Objects = map[string]config.Object{"order": o}
	r := New(db, []Service{{Name: "crm", Config: svc, Conn: e.conn}}, e.clock, e.log, Options{})
	_, err = r.Run(context.Background(), "crm", RunOptions{})
	var invalid *models.InvalidError
	require.ErrorAs(t, err, &invalid)
	require.Empty(t, r.Reconcilable())
	require.Equal(t, []string{"crm"}, e.rec.Reconcilable())
}

// sweptDuring lists through the real connector after marking the run
// interrupted, as another instance's sweep would a run it took for dead.
type sweptDuring struct {
	Lister
	db *gorm.DB
}

func (s sweptDuring) List(ctx context.Context, localType, cursor string) (connector.Page, connector.Call) {
	s.db.Model(&models.ReconciliationRun{}).Where("status = ?", models.RunRunning).
		Updates(map[string]any{"status": models.RunInterrupted, "error": "swept"})
	return s.Lister.List(ctx, localType, cursor)
}

// A run that a sweep marked interrupted stops at its next write and leaves
// the sweep's word standing.
func TestSweptRunStopsAndKeepsTheSweepsWord(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crm.Insert(map[string]any{"external_key": key(1), "title": "x"})
		rec := e.reconciler(sweptDuring{Lister: e.conn, db: db}, Options{})
		run, err := rec.Run(context.Background(), "crm", RunOptions{})
		require.ErrorIs(t, err, models.ErrRunLost)
		require.Equal(t, models.RunInterrupted, run.Status)
		require.Equal(t, "swept", run.Error)
	})
}
