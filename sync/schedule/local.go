package schedule

import (
	"fmt"
	"time"
)

// runLocal runs an EveryInstance task on this instance and keeps its
// state in memory: other instances run their own.
func (s *Scheduler) runLocal(t Task) func() {
	return func() {
		start := s.opts.Clock.Now()
		s.update(t.Name, func(st *State) { st.Running, st.RunningOn, st.RunningSince = true, s.opts.Instance, start })
		err := call(s.ctx, t.Run)
		done := s.opts.Clock.Now()
		s.update(t.Name, func(st *State) {
			st.Running, st.RunningOn, st.RunningSince = false, "", time.Time{}
			st.LastStarted, st.LastDone, st.LastInstance, st.LastError = start, done, s.opts.Instance, s.errorText(err)
			st.Runs++
		})
		s.ran(t.Name, done.Sub(start), err)
	}
}

// runLocalNow starts an EveryInstance task now on this instance, unless it
// is running here already.
func (s *Scheduler) runLocalNow(name string) error {
	s.mu.Lock()
	accepting, busy := s.started && !s.stopping, s.local[name].Running
	s.mu.Unlock()
	switch {
	case !accepting:
		return fmt.Errorf("run %s now: %w", name, ErrStopped)
	case busy:
		return fmt.Errorf("%s: %w", name, ErrRunning)
	}
	if err := s.jobs[name].RunNow(); err != nil {
		return fmt.Errorf("run %s now: %w: %w", name, ErrStopped, err)
	}
	return nil
}

func (s *Scheduler) update(name string, f func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.local[name])
}

// localState is an EveryInstance task's state, with gocron's next run.
func (s *Scheduler) localState(name string) State {
	s.mu.Lock()
	st := *s.local[name]
	s.mu.Unlock()
	if next, err := s.jobs[name].NextRun(); err == nil {
		st.NextRun = next
	}
	return st
}
