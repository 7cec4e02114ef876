package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
)

var quiet = slog.New(slog.DiscardHandler)

// eachURL runs fn once on a fresh SQLite file and once on a fresh Postgres
// schema, with the --db value, so that a test can open one handle per
// instance as separate processes would.
func eachURL(t *testing.T, fn func(t *testing.T, url string)) {
	t.Run(models.SQLite, func(t *testing.T) { fn(t, dbtest.SQLitePath(t)) })
	t.Run(models.Postgres, func(t *testing.T) { fn(t, dbtest.PostgresURL(t)) })
}

func state(t *testing.T, s *Scheduler, name string) State {
	t.Helper()
	st, err := s.State(context.Background(), name)
	require.NoError(t, err)
	return st
}

func TestTasksRunAndRecordTheirOutcome(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		var runs atomic.Int32
		s, err := New([]Task{
			{Name: "count", Every: 50 * time.Millisecond, Run: func(context.Context) error { runs.Add(1); return nil }},
			{Name: "fails", Every: time.Hour, Run: func(context.Context) error { return errors.New("provider down") }},
			{Name: "panics", Every: time.Hour, Run: func(context.Context) error { panic("boom") }},
			{Name: "here", Every: time.Hour, EveryInstance: true, Run: func(context.Context) error { return nil }},
		}, Options{DB: db, Instance: "host-1", Tick: 10 * time.Millisecond, Log: quiet})
		require.NoError(t, err)
		require.ErrorIs(t, s.RunNow(context.Background(), "fails"), ErrStopped, "not started yet")
		s.Start()
		for _, name := range []string{"fails", "panics", "here"} {
			require.NoError(t, s.RunNow(context.Background(), name))
		}
		require.Eventually(t, func() bool {
			return runs.Load() >= 3 && state(t, s, "fails").Runs == 1 && state(t, s, "panics").Runs == 1 && state(t, s, "here").Runs == 1
		}, 5*time.Second, 10*time.Millisecond)
		require.NoError(t, s.Stop())

		states, err := s.States(context.Background())
		require.NoError(t, err)
		require.Equal(t, []string{"count", "fails", "here", "panics"}, []string{states[0].Name, states[1].Name, states[2].Name, states[3].Name})
		require.Empty(t, states[0].LastError)
		require.Equal(t, "provider down", states[1].LastError)
		require.Contains(t, states[3].LastError, "panic: boom")
		for _, st := range states {
			require.Equal(t, "host-1", st.LastInstance, st.Name)
			require.False(t, st.LastStarted.IsZero(), st.Name)
			require.False(t, st.Running, st.Name)
		}
		require.True(t, states[2].EveryInstance)
		require.ErrorIs(t, s.RunNow(context.Background(), "nope"), ErrUnknownTask)
		_, err = s.State(context.Background(), "nope")
		require.ErrorIs(t, err, ErrUnknownTask)
		require.ErrorIs(t, s.RunNow(context.Background(), "fails"), ErrStopped, "stopped")
	})
}

func TestBadTaskIsRefused(t *testing.T) {
	db := dbtest.SQLite(t)
	noop := func(context.Context) error { return nil }
	_, err := New([]Task{{Name: "x", Every: 0, Run: noop}}, Options{DB: db})
	require.ErrorContains(t, err, `task "x"`)
	_, err = New([]Task{{Name: "x", Every: time.Hour, Run: noop}, {Name: "x", Every: time.Minute, Run: noop}}, Options{DB: db})
	require.ErrorContains(t, err, `task "x": listed twice`)
	_, err = New([]Task{{Name: "x", Every: time.Hour, Run: noop}}, Options{})
	require.ErrorContains(t, err, "needs a database")
}

// periodLog records which period of a fake clock each run of each task
// started in, and on which instance.
type periodLog struct {
	mu    sync.Mutex
	start time.Time
	every time.Duration
	runs  map[string]map[int][]string // task → period → instances
}

func (p *periodLog) task(name, instance string, clk clock.Clock) func(context.Context) error {
	return func(context.Context) error {
		period := int(clk.Now().Sub(p.start) / p.every)
		p.mu.Lock()
		p.runs[name][period] = append(p.runs[name][period], instance)
		p.mu.Unlock()
		time.Sleep(2 * time.Millisecond) // let the other instances' ticks land mid-run
		return nil
	}
}

func (p *periodLog) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, periods := range p.runs {
		for _, on := range periods {
			n += len(on)
		}
	}
	return n
}

// The issue: with 3 instances, refresh-stats ran 12 times in 40 s, once per
// instance per period. Here 6 instances, each on its own connection pool,
// tick 4 shared tasks every 2 ms (24 ticking jobs, each claiming through the
// database) while a fake clock steps through 6 periods; every task must
// run exactly once in each period, the StartNow one in period 0 too.
func TestEachPeriodRunsOnceAcrossInstances(t *testing.T) {
	eachURL(t, func(t *testing.T, url string) {
		const instances, periods, every = 6, 6, 10 * time.Second
		clk := clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		log := &periodLog{start: clk.Now(), every: every, runs: map[string]map[int][]string{}}
		names := []string{"refresh-stats", "rescue-expired-leases", "prune-sessions", "reconcile"}
		for _, n := range names {
			log.runs[n] = map[int][]string{}
		}
		scheds := make([]*Scheduler, instances)
		errs := make([]error, instances)
		var wg sync.WaitGroup
		for i := range scheds {
			db := dbtest.Open(t, url)
			wg.Add(1)
			go func() { // instances start together, registering the same rows
				defer wg.Done()
				inst := fmt.Sprintf("host-%d", i)
				var tasks []Task
				for _, n := range names {
					tasks = append(tasks, Task{Name: n, Every: every, StartNow: n == "refresh-stats", Run: log.task(n, inst, clk)})
				}
				scheds[i], errs[i] = New(tasks, Options{DB: db, Clock: clk, Instance: inst, Tick: 2 * time.Millisecond, Log: quiet})
			}()
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		for _, s := range scheds {
			s.Start()
			t.Cleanup(func() { _ = s.Stop() })
		}
		want := 1 // refresh-stats's first run, at start
		for p := 0; p <= periods; p++ {
			require.Eventually(t, func() bool { return log.total() >= want }, 10*time.Second, 5*time.Millisecond,
				"period %d: %d runs, want %d", p, log.total(), want)
			time.Sleep(60 * time.Millisecond) // 30 more ticks of every instance
			require.Equal(t, want, log.total(), "period %d: a task ran twice", p)
			if p < periods {
				clk.Advance(every)
				want += len(names)
			}
		}
		for _, s := range scheds {
			require.NoError(t, s.Stop())
		}
		for _, n := range names {
			for p, on := range log.runs[n] {
				require.Len(t, on, 1, "%s ran %d times in period %d, on %v", n, len(on), p, on)
			}
		}
		require.Len(t, log.runs["refresh-stats"], periods+1, "the StartNow task ran at start and in each period")
		require.Len(t, log.runs["reconcile"], periods)
		st := state(t, scheds[0], "refresh-stats")
		require.EqualValues(t, periods+1, st.Runs, "the row counts every instance's runs")
		require.Contains(t, log.runs["refresh-stats"][periods], st.LastInstance, "the row names the instance that ran it")
	})
}

// blocker is a task that runs until released, counting its starts.
type blocker struct {
	started atomic.Int32
	release chan struct{}
	ctxErr  chan error
}

func newBlocker() *blocker {
	return &blocker{release: make(chan struct{}), ctxErr: make(chan error, 10)}
}

func (b *blocker) run(ctx context.Context) error {
	b.started.Add(1)
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		select {
		case b.ctxErr <- ctx.Err():
		default: // never block a run (and so Stop) on a full channel
		}
		return ctx.Err()
	}
}

// Run now on a shared task runs it once, on the instance asked, however
// many instances are asked at once; the others are told it is running.
func TestRunNowRunsOnceAcrossInstances(t *testing.T) {
	eachURL(t, func(t *testing.T, url string) {
		b := newBlocker()
		var scheds []*Scheduler
		for i := range 4 {
			s, err := New([]Task{{Name: "prune-events", Every: time.Hour, Run: b.run}},
				Options{DB: dbtest.Open(t, url), Instance: fmt.Sprintf("host-%d", i), Tick: 5 * time.Millisecond, Log: quiet})
			require.NoError(t, err)
			s.Start()
			defer s.Stop()
			scheds = append(scheds, s)
		}
		var ok, busy atomic.Int32
		var wg sync.WaitGroup
		for g := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := scheds[g%len(scheds)].RunNow(context.Background(), "prune-events")
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, ErrRunning):
					busy.Add(1)
				default:
					t.Errorf("run now: %v", err)
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 1, ok.Load(), "one click wins")
		require.EqualValues(t, 39, busy.Load())
		require.Eventually(t, func() bool { return b.started.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
		st := state(t, scheds[3], "prune-events")
		require.True(t, st.Running, "every instance sees the run")
		ranOn := st.RunningOn
		require.Regexp(t, `^host-\d$`, ranOn)
		close(b.release)
		require.Eventually(t, func() bool { st = state(t, scheds[0], "prune-events"); return st.Runs == 1 && !st.Running },
			5*time.Second, 5*time.Millisecond)
		require.Equal(t, ranOn, st.LastInstance, "the last run is the one that was running")
		require.EqualValues(t, 1, b.started.Load())
		require.True(t, st.NextRun.After(time.Now().Add(50*time.Minute)), "Run now leaves the next run where it was: %v", st.NextRun)
	})
}

// An instance that dies mid-run holds its task only until the lease runs
// out; then another runs it. A run that loses its claim is stopped.
func TestALeaseFreesTheTaskOfADeadInstance(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		b := newBlocker()
		s, err := New([]Task{{Name: "reconcile", Every: time.Minute, Run: b.run}},
			Options{DB: db, Clock: clk, Instance: "alive", Tick: 2 * time.Millisecond, Lease: 30 * time.Millisecond, Log: quiet})
		require.NoError(t, err)
		now := clk.Now()
		// A dead instance's claim: due a minute in, taken, never finished.
		won, err := models.ClaimTask(db, models.TaskClaim{Name: "reconcile", Token: "dead/1", Instance: "dead",
			Now: now, Until: now.Add(5 * time.Minute)})
		require.NoError(t, err)
		require.True(t, won)
		s.Start()
		defer s.Stop()
		clk.Advance(time.Minute) // due, but the dead instance's lease holds
		time.Sleep(50 * time.Millisecond)
		require.Zero(t, b.started.Load(), "ran while another instance's lease held the task")
		require.Equal(t, "dead", state(t, s, "reconcile").RunningOn)

		clk.Advance(5 * time.Minute) // the lease is out
		require.Eventually(t, func() bool { return b.started.Load() == 1 }, 5*time.Second, 2*time.Millisecond)
		require.Equal(t, "alive", state(t, s, "reconcile").RunningOn)

		// Another instance takes the task over (as if this one's lease had
		// run out): this run's next renewal finds so and stops it.
		require.NoError(t, db.Model(&models.ScheduledTask{}).Where("name = ?", "reconcile").
			Update("run_token", "other/1").Error)
		select {
		case err := <-b.ctxErr:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(5 * time.Second):
			t.Fatal("a run whose claim was taken over kept running")
		}
	})
}

// A run whose lease cannot be renewed (the database refuses) is stopped
// once the lease has run out: another instance may have taken the task.
func TestARunStopsWhenItsLeaseRunsOutUnrenewed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		b := newBlocker()
		s, err := New([]Task{{Name: "reconcile", Every: time.Minute, Run: b.run}},
			Options{DB: db, Clock: clk, Instance: "alive", Tick: 2 * time.Millisecond, Lease: 30 * time.Millisecond, Log: quiet})
		require.NoError(t, err)
		s.Start()
		defer s.Stop()
		clk.Advance(time.Minute)
		require.Eventually(t, func() bool { return b.started.Load() == 1 }, 5*time.Second, 2*time.Millisecond)

		// Renewals now fail; while the lease holds the run goes on.
		require.NoError(t, db.Exec("ALTER TABLE scheduled_tasks RENAME TO scheduled_tasks_away").Error)
		defer func() {
			require.NoError(t, db.Exec("ALTER TABLE scheduled_tasks_away RENAME TO scheduled_tasks").Error)
		}()
		select {
		case <-b.ctxErr:
			t.Fatal("stopped while its lease still held")
		case <-time.After(60 * time.Millisecond):
		}
		clk.Advance(time.Minute) // the lease is out, unrenewed
		select {
		case err := <-b.ctxErr:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(5 * time.Second):
			t.Fatal("a run whose lease ran out unrenewed kept running")
		}
	})
}

// Stop waits for a Run now run, and the run sees its context end.
func TestStopEndsRunNowRuns(t *testing.T) {
	db := dbtest.SQLite(t)
	b := newBlocker()
	s, err := New([]Task{{Name: "prune-attempts", Every: time.Hour, Run: b.run}}, Options{DB: db, Log: quiet})
	require.NoError(t, err)
	s.Start()
	require.NoError(t, s.RunNow(context.Background(), "prune-attempts"))
	require.Eventually(t, func() bool { return b.started.Load() == 1 }, 5*time.Second, 2*time.Millisecond)
	require.NoError(t, s.Stop())
	require.ErrorIs(t, <-b.ctxErr, context.Canceled)
	st := state(t, s, "prune-attempts")
	require.False(t, st.Running, "a run cut short frees its task")
	require.Equal(t, "stopped before it ended: syncdesk was stopping", st.LastError)
	var row models.ScheduledTask
	require.NoError(t, db.Where("name = ?", "prune-attempts").Take(&row).Error)
	require.Zero(t, row.Failures, "a stop is no failure of the task's")
}

// A task whose row was deleted by hand gets it back at the next tick, and
// runs on its period again.
func TestADeletedRowIsMadeAgain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		var runs atomic.Int32
		s, err := New([]Task{{Name: "prune-sessions", Every: time.Minute, Run: func(context.Context) error { runs.Add(1); return nil }}},
			Options{DB: db, Clock: clk, Tick: 2 * time.Millisecond, Log: quiet})
		require.NoError(t, err)
		require.NoError(t, db.Where("name = ?", "prune-sessions").Delete(&models.ScheduledTask{}).Error)
		s.Start()
		defer s.Stop()
		require.Eventually(t, func() bool {
			_, err := models.GetScheduledTask(db, "prune-sessions")
			return err == nil
		}, 5*time.Second, 2*time.Millisecond)
		clk.Advance(time.Minute)
		require.Eventually(t, func() bool { return runs.Load() == 1 }, 5*time.Second, 2*time.Millisecond)
	})
}
