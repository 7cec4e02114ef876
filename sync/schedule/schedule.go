// Package schedule runs syncdesk's background tasks with gocron. The engine
// packages know nothing of gocron: each task is one call into them, and the
// table of tasks is built in main.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
)

// Task is one row of the task table.
type Task struct {
	Name  string
	Every time.Duration
	Run   func(ctx context.Context) error
	// EveryInstance runs the task on every instance at once instead of one
	// at a time: for work that is itself safe to share, like claiming links.
	EveryInstance bool
	// StartNow runs the task once at start instead of one period in.
	StartNow bool
}

// State is what the schedules page shows of a task.
type State struct {
	Name        string
	Every       time.Duration
	LastStarted time.Time
	LastDone    time.Time
	LastError   string // "" when the last run succeeded
	Runs        int
	NextRun     time.Time
	Running     bool
}

// Scheduler runs the tasks on their periods, each run at most once at a time
// per process, and across processes when given a distributed locker.
type Scheduler struct {
	gs    gocron.Scheduler
	log   *slog.Logger
	mu    sync.Mutex
	state map[string]*State
	jobs  map[string]gocron.Job
	ctx   context.Context
	stop  context.CancelFunc
}

// New builds a scheduler for tasks. locker is nil for a single instance
// (SQLite); it is a concrete pointer, not gocron's interface, so that a nil
// one cannot slip through as a non-nil interface holding nothing.
func New(tasks []Task, locker *PGLocker, log *slog.Logger) (*Scheduler, error) {
	opts := []gocron.SchedulerOption{gocron.WithLocation(time.UTC), gocron.WithStopTimeout(10 * time.Second)}
	if locker != nil {
		opts = append(opts, gocron.WithDistributedLocker(locker))
	}
	gs, err := gocron.NewScheduler(opts...)
	if err != nil {
		return nil, fmt.Errorf("new scheduler: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Scheduler{gs: gs, log: log, state: map[string]*State{}, jobs: map[string]gocron.Job{}, ctx: ctx, stop: stop}
	for _, t := range tasks {
		if t.Every <= 0 || t.Name == "" || t.Run == nil {
			return nil, fmt.Errorf("task %q: needs a name, a positive period and a function", t.Name)
		}
		s.state[t.Name] = &State{Name: t.Name, Every: t.Every}
		jobOpts := []gocron.JobOption{gocron.WithName(t.Name), gocron.WithSingletonMode(gocron.LimitModeReschedule),
			gocron.WithDisabledDistributedJobLocker(t.EveryInstance)}
		if t.StartNow {
			jobOpts = append(jobOpts, gocron.WithStartAt(gocron.WithStartImmediately()))
		}
		j, err := gs.NewJob(gocron.DurationJob(t.Every), gocron.NewTask(s.wrap(t)), jobOpts...)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.Name, err)
		}
		s.jobs[t.Name] = j
	}
	return s, nil
}

// wrap records each run's start, end and error, and never lets a panic out.
func (s *Scheduler) wrap(t Task) func() {
	return func() {
		start := time.Now().UTC()
		s.update(t.Name, func(st *State) { st.LastStarted, st.Running = start, true })
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return t.Run(s.ctx)
		}()
		s.update(t.Name, func(st *State) {
			st.LastDone, st.Running, st.LastError = time.Now().UTC(), false, ""
			st.Runs++
			if err != nil {
				st.LastError = err.Error()
			}
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("scheduled task failed", "task", t.Name, "err", err)
		}
	}
}

func (s *Scheduler) update(name string, f func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.state[name])
}

// Start begins running the tasks.
func (s *Scheduler) Start() { s.gs.Start() }

// Stop cancels running tasks' context and waits for them to return.
func (s *Scheduler) Stop() error {
	s.stop()
	return s.gs.Shutdown()
}

// RunNow runs a task at once, outside its period.
func (s *Scheduler) RunNow(name string) error {
	j, ok := s.jobs[name]
	if !ok {
		return fmt.Errorf("no task named %q", name)
	}
	return j.RunNow()
}

// States returns every task's state, by name.
func (s *Scheduler) States() []State {
	s.mu.Lock()
	out := make([]State, 0, len(s.state))
	for _, st := range s.state {
		out = append(out, *st)
	}
	s.mu.Unlock()
	for i := range out {
		if next, err := s.jobs[out[i].Name].NextRun(); err == nil {
			out[i].NextRun = next
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
