package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/schedule"
	"github.com/syncdesk/syncdesk/views"
)

// testScheduler runs, as instance "web-1", a "send" task on every instance
// that counts its runs and a shared "prune-events" task that fails, both on
// periods too long to fire by themselves during a test.
func testScheduler(t *testing.T, db *gorm.DB) (*schedule.Scheduler, *atomic.Int32) {
	t.Helper()
	var runs atomic.Int32
	s, err := schedule.New([]schedule.Task{
		{Name: "send", Every: time.Hour, EveryInstance: true, Run: func(context.Context) error { runs.Add(1); return nil }},
		{Name: "prune-events", Every: 10 * time.Minute, Run: func(context.Context) error {
			return errors.New("the database is read-only")
		}},
	}, schedule.Options{DB: db, Instance: "web-1", Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() { _ = s.Stop() })
	return s, &runs
}

// taskState is one task's state as the scheduler has it.
func taskState(t *testing.T, s *schedule.Scheduler, name string) schedule.State {
	t.Helper()
	st, err := s.State(context.Background(), name)
	require.NoError(t, err)
	return st
}

func TestSchedulesListAndRunNow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		sched, runs := testScheduler(t, db)
		b, _ := pagesServer(t, db, sched)

		// Schedules are for admins (README's HTTP surface: /schedules is for admins): others neither see
		// the page nor its menu item.
		viewer := b.signedIn("vera@example.com", models.RoleViewer)
		op := b.signedIn("olga@example.com", models.RoleOperator)
		for _, c := range []*client{viewer, op} {
			r := c.get("/schedules")
			require.Equal(t, http.StatusForbidden, r.status)
			require.NotContains(t, r.body, "Sends links that are due")
			require.NotContains(t, c.get("/").body, `href="/schedules"`, "no Schedules menu item for a non-admin")
		}
		r := viewer.post("/", "/schedules/send/run", nil)
		require.Equal(t, http.StatusForbidden, r.status)
		r = op.post("/", "/schedules/send/run", nil)
		require.Equal(t, http.StatusForbidden, r.status)
		require.Equal(t, int64(4), b.auditCount("access.denied", models.OutcomeDenied))
		require.Zero(t, runs.Load())

		admin := b.signedIn("root@example.com", models.RoleAdmin)
		r = admin.get("/schedules")
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, `href="/schedules" aria-current="page"`)
		require.Contains(t, r.body, "Sends links that are due")
		require.Contains(t, r.body, "Deletes old webhook events")
		require.Contains(t, r.body, "Every hour")
		require.Contains(t, r.body, "Every 10 minutes")
		require.Contains(t, r.body, "Not run yet")
		require.Contains(t, r.body, `data-testid="run-send"`)
		r = admin.post("/schedules", "/schedules/send/run", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, "/schedules?done=task-started", r.header.Get("Location"))
		require.Eventually(t, func() bool { return runs.Load() == 1 }, 5*time.Second, 10*time.Millisecond)
		require.Equal(t, int64(1), b.auditCount("schedule.run", models.OutcomeSuccess))

		r = admin.post("/schedules", "/schedules/prune-events/run", nil)
		require.Equal(t, http.StatusSeeOther, r.status)
		require.Eventually(t, func() bool { return taskState(t, sched, "prune-events").Runs == 1 }, 5*time.Second, 10*time.Millisecond)
		r = admin.get("/schedules?done=task-started")
		require.Contains(t, r.body, "The task was started")
		require.Contains(t, r.body, "the database is read-only")
		require.Contains(t, r.body, "Failed")
		require.Contains(t, r.body, "1 run")
		require.Contains(t, r.body, "on <span class=\"nowrap\">web-1</span> (this\u00a0instance) · took ")
		require.Contains(t, r.body, "on every instance", "sending is said to run on each")

		require.Equal(t, http.StatusNotFound, admin.post("/schedules", "/schedules/nope/run", nil).status)
	})
}

func TestSchedulesWithoutAScheduler(t *testing.T) {
	t.Parallel()
	b, _ := pagesServer(t, dbtest.SQLite(t), nil)
	admin := b.signedIn("root@example.com", models.RoleAdmin)
	r := admin.get("/schedules")
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.body, `data-testid="empty-schedules"`)
	require.Equal(t, http.StatusNotFound, admin.post("/schedules", "/schedules/send/run", nil).status)
}

// reconcileScheduleServer serves syncdesk with a reconciler over the CRM and
// a scheduler whose reconcile task is the reconciler's own RunDue, as in main.
func reconcileScheduleServer(t *testing.T, db *gorm.DB) (*bundle, *reconcile.Reconciler) {
	t.Helper()
	b, rec := reconcileServer(t, db, 100)
	log := slog.New(slog.DiscardHandler)
	sched, err := schedule.New([]schedule.Task{{Name: "reconcile", Every: time.Minute, Run: rec.RunDue}},
		schedule.Options{DB: db, Log: log})
	require.NoError(t, err)
	sched.Start()
	t.Cleanup(func() { _ = sched.Stop() })
	s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Version: "test", Log: log, Outbox: b.eng,
		Reconciler: rec, Scheduler: sched})
	require.NoError(t, err)
	require.NoError(t, addReconcileRoutes(s))
	require.NoError(t, addEventAndScheduleRoutes(s))
	b.srv.Close()
	b.srv = httptest.NewServer(s.Handler())
	t.Cleanup(b.srv.Close)
	return b, rec
}

// Run now on the reconcile task starts a run of every service, even one
// reconciled a minute ago: the task alone would start only the runs that
// are due, that is none, while the page said "The task was started".
func TestRunNowOnReconcileStartsARunOfEveryService(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rec := reconcileScheduleServer(t, db)
		b.seedOrders(1, 2)
		first, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{TriggeredBy: "scheduler"})
		require.NoError(t, err)
		admin := b.signedIn("root@example.com", models.RoleAdmin)

		r := admin.get("/schedules")
		require.Contains(t, r.body, "Checks every minute", "the task's own period, said as what it does")
		require.Contains(t, r.body, "crm is reconciled every hour")
		require.Contains(t, r.body, "Starts a run of every service")

		r = admin.post("/schedules", "/schedules/reconcile/run", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, "/reconcile?done=runs-started", r.header.Get("Location"))
		last, err := models.LatestRun(db, "crm")
		require.NoError(t, err)
		require.Greater(t, last.ID, first.ID, "Run now started no reconciliation run")
		require.Equal(t, "root@example.com", last.TriggeredBy)
		b.waitRunEnd(last.ID)
		r = admin.get("/reconcile?done=runs-started")
		require.Contains(t, r.body, "A reconciliation run was started for every service")
		require.Contains(t, r.body, views.RunURL(last.ID))
		require.Equal(t, int64(1), b.auditCount("schedule.run", models.OutcomeSuccess))

		// A service already being reconciled is not started twice, and the page says so.
		now := b.clock.Now()
		require.NoError(t, models.StartRun(db, &models.ReconciliationRun{Service: "crm", TriggeredBy: "other",
			Owner: "elsewhere", HeartbeatAt: &now, StartedAt: now}))
		r = admin.post("/schedules", "/schedules/reconcile/run", nil)
		require.Equal(t, "/reconcile?done=runs-all-busy", r.header.Get("Location"))
		require.Contains(t, admin.get("/reconcile?done=runs-all-busy").body, "no new run was started")
	})
}

// Every task is described in words, and the main one, sending, comes first:
// by importance, not by name.
func TestSchedulesInOrderOfImportanceAndInWords(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		var tasks []schedule.Task
		for _, name := range []string{"prune-attempts", "prune-events", "reconcile", "refresh-stats", "send", "rescue-expired-leases"} {
			tasks = append(tasks, schedule.Task{Name: name, Every: time.Hour, Run: func(context.Context) error { return nil }})
		}
		sched, err := schedule.New(tasks, schedule.Options{DB: db, Log: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		sched.Start()
		t.Cleanup(func() { _ = sched.Stop() })
		b, _ := pagesServer(t, db, sched)
		body := b.signedIn("root@example.com", models.RoleAdmin).get("/schedules").body

		var order []string
		for _, m := range regexp.MustCompile(`data-testid="task-([a-z-]+)"`).FindAllStringSubmatch(body, -1) {
			order = append(order, m[1])
		}
		require.Equal(t, []string{"send", "rescue-expired-leases", "reconcile", "refresh-stats", "prune-attempts", "prune-events"}, order)
		require.Contains(t, body, "Recounts the numbers on the overview")

		// The scheduler's clock is not the page's: a run it stamped a moment
		// after the page's now still happened, so it never reads "in …".
		require.NoError(t, sched.RunNow(context.Background(), "send"))
		require.Eventually(t, func() bool { return taskState(t, sched, "send").Runs == 1 }, 5*time.Second, 10*time.Millisecond)
		b.clock.Advance(time.Now().Add(-5 * time.Second).Sub(b.clock.Now()))
		body = b.signedIn("rita@example.com", models.RoleAdmin).get("/schedules").body
		require.Regexp(t, `data-testid="task-send">(?s:.)*?data-testid="last-run"><span class="nowrap"><time[^>]*>[0-9:]+</time>\s*<span class="muted stamp-ago">just now<`, body)
	})
}

// With two instances on one database, the page on one shows the run the
// other is doing, and then its last run, named by the instance that ran it;
// Run now there does not start a second run.
func TestSchedulesShowTheLastRunByAnyInstance(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		sched, _ := testScheduler(t, db)
		b, _ := pagesServer(t, db, sched)
		b.clock.Advance(time.Now().UTC().Sub(b.clock.Now())) // the schedulers keep wall-clock times
		release, started := make(chan struct{}), make(chan struct{}, 1)
		other, err := schedule.New([]schedule.Task{{Name: "prune-events", Every: 10 * time.Minute, Run: func(ctx context.Context) error {
			started <- struct{}{}
			select { // a failed test's Stop must not wait for a release that never comes
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}}}, schedule.Options{DB: db, Instance: "worker-2", Log: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		other.Start()
		t.Cleanup(func() { _ = other.Stop() })
		require.NoError(t, other.RunNow(context.Background(), "prune-events"))
		<-started

		admin := b.signedIn("root@example.com", models.RoleAdmin)
		body := admin.get("/schedules").body
		require.Regexp(t, `data-testid="running-on">on <span class="nowrap">worker-2</span>, started `, body)
		r := admin.post("/schedules", "/schedules/prune-events/run", nil)
		require.Equal(t, "/schedules?done=task-busy", r.header.Get("Location"))
		require.Equal(t, int64(1), b.auditCount("schedule.run", models.OutcomeFailure))
		require.Contains(t, admin.get("/schedules?done=task-busy").body, "already running")

		close(release)
		require.Eventually(t, func() bool { st := taskState(t, sched, "prune-events"); return st.Runs == 1 && !st.Running },
			5*time.Second, 10*time.Millisecond)
		body = admin.get("/schedules").body
		// The run lasts from RunNow to the release above: milliseconds on a quiet
		// machine, seconds on a loaded one.
		require.Regexp(t, `data-testid="last-run-on">on <span class="nowrap">worker-2</span> · took [\d.]+\x{a0}m?s<`, body)
		require.NotContains(t, body, "Running now")
		require.NotContains(t, body, "the database is read-only", "this instance's failing function never ran")
	})
}
