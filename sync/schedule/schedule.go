// Package schedule runs syncdesk's background tasks with gocron. The engine
// packages know nothing of gocron: each task is one call into them, and the
// table of tasks is built in main.
//
// Instances that share a database share each task's row (models.ScheduledTask),
// so that a task runs once per period across all of them: every instance
// looks often, and only the one whose compare-and-set finds the task due
// and free runs it. Tasks marked EveryInstance are not shared: each
// instance runs them on its own period and keeps their state in memory.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Errors RunNow returns.
var (
	// ErrRunning means the task is running now, here or on another instance.
	ErrRunning = errors.New("the task is running already")
	// ErrStopped means the scheduler has not started or is stopping.
	ErrStopped = errors.New("the scheduler is not running")
	// ErrUnknownTask means no task has the name.
	ErrUnknownTask = errors.New("no such task")
)

// Task is one row of the task table.
type Task struct {
	Name  string
	Every time.Duration
	Run   func(ctx context.Context) error
	// EveryInstance runs the task on every instance instead of once per
	// period across them: for work that is itself safe to share, like
	// claiming links.
	EveryInstance bool
	// StartNow makes a new task due at once instead of one period in.
	StartNow bool
}

// State is what the schedules page shows of a task.
type State struct {
	Name          string
	Every         time.Duration
	EveryInstance bool
	LastStarted   time.Time // of the last run that ended
	LastDone      time.Time
	LastError     string // "" when the last run succeeded
	LastInstance  string // the instance that ran it
	Runs          int64  // by every instance; an EveryInstance task's, by this one
	NextRun       time.Time
	Running       bool
	RunningOn     string
	RunningSince  time.Time
}

// Options configures a Scheduler.
type Options struct {
	DB       *gorm.DB    // holds the shared task rows; required
	Clock    clock.Clock // stamps runs and decides what is due (default the wall clock)
	Instance string      // names this instance on the page (default host-pid)
	// Tick is how often an instance looks for a shared task that is due
	// (default a second): a run starts at most a tick late.
	Tick time.Duration
	// Lease is how long a run holds its task without renewing; renewed
	// every third of it while the run lasts. An instance that dies mid-run
	// frees its task when the lease runs out (default a minute).
	Lease    time.Duration
	Log      *slog.Logger
	Redactor *redact.Redactor // cleans the errors kept for the page
}

func (o *Options) defaults() error {
	if o.DB == nil {
		return errors.New("schedule: needs a database for the task rows")
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Instance == "" {
		host, _ := os.Hostname()
		o.Instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Lease <= 0 {
		o.Lease = time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Redactor == nil {
		o.Redactor = redact.New(nil)
	}
	return nil
}

// Scheduler runs the tasks on their periods: each shared task once per
// period across the instances on its database, each run at most once at a
// time anywhere.
type Scheduler struct {
	gs    gocron.Scheduler
	opts  Options
	tasks map[string]Task
	jobs  map[string]gocron.Job
	ctx   context.Context
	stop  context.CancelFunc

	mu       sync.Mutex
	local    map[string]*State // the EveryInstance tasks' state
	started  bool
	stopping bool
	runsNow  sync.WaitGroup // Run now runs of shared tasks, waited for at Stop
	stopOnce sync.Once
	stopErr  error
}

// New builds a scheduler for tasks and gives each shared task its row.
func New(tasks []Task, opts Options) (*Scheduler, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	gs, err := gocron.NewScheduler(gocron.WithLocation(time.UTC), gocron.WithStopTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("new scheduler: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Scheduler{gs: gs, opts: opts, tasks: map[string]Task{}, jobs: map[string]gocron.Job{},
		local: map[string]*State{}, ctx: ctx, stop: stop}
	for _, t := range tasks {
		if err := s.add(t); err != nil {
			stop()
			_ = gs.Shutdown()
			return nil, err
		}
	}
	return s, nil
}

// add puts one task on the schedule: an EveryInstance task on its own
// period, a shared one on the tick that looks whether it is due.
func (s *Scheduler) add(t Task) error {
	if t.Every <= 0 || t.Name == "" || t.Run == nil {
		return fmt.Errorf("task %q: needs a name, a positive period and a function", t.Name)
	}
	if _, dup := s.tasks[t.Name]; dup {
		return fmt.Errorf("task %q: listed twice", t.Name)
	}
	s.tasks[t.Name] = t
	opts := []gocron.JobOption{gocron.WithName(t.Name), gocron.WithSingletonMode(gocron.LimitModeReschedule)}
	var every time.Duration
	var run func()
	if t.EveryInstance {
		s.local[t.Name] = &State{Name: t.Name, Every: t.Every, EveryInstance: true}
		every, run = t.Every, s.runLocal(t)
		if t.StartNow {
			opts = append(opts, gocron.WithStartAt(gocron.WithStartImmediately()))
		}
	} else {
		if err := s.register(t); err != nil {
			return err
		}
		every, run = min(s.opts.Tick, t.Every), s.tick(t)
		opts = append(opts, gocron.WithStartAt(gocron.WithStartImmediately()))
	}
	j, err := s.gs.NewJob(gocron.DurationJob(every), gocron.NewTask(run), opts...)
	if err != nil {
		return fmt.Errorf("task %s: %w", t.Name, err)
	}
	s.jobs[t.Name] = j
	return nil
}

// Start begins running the tasks.
func (s *Scheduler) Start() {
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	s.gs.Start()
}

// Stop cancels running tasks' context and waits for them to return. A
// second Stop waits for the first and returns what it did.
func (s *Scheduler) Stop() error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopping = true
		s.mu.Unlock()
		s.stop()
		s.stopErr = s.gs.Shutdown()
		s.runsNow.Wait()
	})
	return s.stopErr
}

// Instance is the name this instance goes by in the task rows.
func (s *Scheduler) Instance() string { return s.opts.Instance }

// Has reports whether a task of that name is on the schedule.
func (s *Scheduler) Has(name string) bool { _, ok := s.tasks[name]; return ok }

// RunNow runs a task at once, outside its period, on this instance: a
// shared task only if no instance is running it (ErrRunning), and without
// moving its next run. It returns once the run is under way.
func (s *Scheduler) RunNow(ctx context.Context, name string) error {
	t, ok := s.tasks[name]
	if !ok {
		return fmt.Errorf("%q: %w", name, ErrUnknownTask)
	}
	if t.EveryInstance {
		return s.runLocalNow(name)
	}
	return s.runSharedNow(ctx, t)
}

// States returns every task's state, by name: a shared task's as its row
// says, by whichever instance ran it.
func (s *Scheduler) States(ctx context.Context) ([]State, error) {
	rows, err := s.rows(ctx)
	if err != nil {
		return nil, err
	}
	now := s.opts.Clock.Now()
	out := make([]State, 0, len(s.tasks))
	for name, t := range s.tasks {
		if t.EveryInstance {
			out = append(out, s.localState(name))
		} else {
			out = append(out, sharedState(t, rows[name], now))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// State returns one task's state; ErrUnknownTask when there is none.
func (s *Scheduler) State(ctx context.Context, name string) (State, error) {
	states, err := s.States(ctx)
	if err != nil {
		return State{}, err
	}
	for _, st := range states {
		if st.Name == name {
			return st, nil
		}
	}
	return State{}, fmt.Errorf("%q: %w", name, ErrUnknownTask)
}

// call runs a task's function, turning a panic into an error.
func call(ctx context.Context, run func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return run(ctx)
}

// ran logs a run: failures as warnings, every run at debug level.
func (s *Scheduler) ran(name string, took time.Duration, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		s.opts.Log.Warn("scheduled task failed", "task", name, "instance", s.opts.Instance, "err", err)
	}
	s.opts.Log.Debug("scheduled task ran", "task", name, "instance", s.opts.Instance, "took", took)
}

// errorText is what the page keeps of a run's error: redacted and bounded.
func (s *Scheduler) errorText(err error) string {
	if err == nil {
		return ""
	}
	return s.opts.Redactor.TextPrefix(err.Error(), maxErrorText)
}

// maxErrorText bounds the error kept for a task's last run.
const maxErrorText = 2000
