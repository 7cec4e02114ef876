package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/syncdesk/syncdesk/models"
)

// register gives a shared task its row, first due at once (StartNow) or a
// period from now; an instance joining later keeps the row's schedule.
func (s *Scheduler) register(t Task) error {
	now := s.opts.Clock.Now()
	first := now.Add(t.Every)
	if t.StartNow {
		first = now
	}
	return models.RegisterTask(s.opts.DB.WithContext(s.ctx), t.Name, first, now.Add(t.Every))
}

// tick looks whether a shared task is due and free, and if this instance's
// claim on it wins, runs it here.
func (s *Scheduler) tick(t Task) func() {
	return func() {
		if s.ctx.Err() != nil {
			return
		}
		now := s.opts.Clock.Now()
		row, err := models.GetScheduledTask(s.opts.DB.WithContext(s.ctx), t.Name)
		if errors.Is(err, models.ErrNotFound) {
			err = s.register(t) // the row was deleted by hand: make it again
		}
		if err != nil {
			s.tickFailed(t.Name, err)
			return
		}
		if row.NextRunAt.After(now) || row.Running(now) {
			return // the read spares the claim's write on most ticks
		}
		c := s.claim(t.Name, now, nextRun(row.NextRunAt, t.Every, now))
		won, err := models.ClaimTask(s.opts.DB.WithContext(s.ctx), c)
		if err != nil {
			s.tickFailed(t.Name, err)
			return
		}
		if won {
			s.runClaimed(t, c)
		}
	}
}

func (s *Scheduler) tickFailed(name string, err error) {
	if !errors.Is(err, context.Canceled) {
		s.opts.Log.Warn("scheduled task: cannot read or claim its row", "task", name, "err", err)
	}
}

// nextRun is the period after prev. Periods keep their phase (prev plus a
// period, not now plus one, so that a run a tick late does not push the
// next one back); after a pause longer than a period — every instance
// down — the missed runs are not made up, the next is a period from now.
func nextRun(prev time.Time, every time.Duration, now time.Time) time.Time {
	if next := prev.Add(every); next.After(now) {
		return next
	}
	return now.Add(every)
}

// claim is this instance's bid for one run starting now; a zero next is
// a Run now, which leaves the task's next run where it is.
func (s *Scheduler) claim(name string, now, next time.Time) models.TaskClaim {
	return models.TaskClaim{Name: name, Token: s.opts.Instance + "/" + models.NewSecret(6), Instance: s.opts.Instance,
		Now: now, Until: now.Add(s.opts.Lease), Next: next}
}

// runSharedNow claims a shared task for a run now, whether due or not, and
// runs it in the background; ErrRunning when some instance holds it.
func (s *Scheduler) runSharedNow(ctx context.Context, t Task) error {
	s.mu.Lock()
	if !s.started || s.stopping {
		s.mu.Unlock()
		return fmt.Errorf("run %s now: %w", t.Name, ErrStopped)
	}
	s.runsNow.Add(1) // under mu: Stop waits for every run it let start
	s.mu.Unlock()
	c := s.claim(t.Name, s.opts.Clock.Now(), time.Time{})
	won, err := models.ClaimTask(s.opts.DB.WithContext(ctx), c)
	if err != nil || !won {
		s.runsNow.Done()
		if err != nil {
			return err
		}
		return fmt.Errorf("%s: %w", t.Name, ErrRunning)
	}
	go func() {
		defer s.runsNow.Done()
		s.runClaimed(t, c)
	}()
	return nil
}

// runClaimed runs a task this instance has claimed, renews the claim's
// lease while it runs, and records how the run went in the task's row.
func (s *Scheduler) runClaimed(t Task, c models.TaskClaim) {
	ctx, cancel := context.WithCancel(s.ctx)
	renewing := s.keepLease(ctx, cancel, c)
	err := call(ctx, t.Run)
	cancel()
	<-renewing
	done := s.opts.Clock.Now()
	s.ran(t.Name, done.Sub(c.Now), err)
	run := models.TaskRun{Instance: s.opts.Instance, Started: c.Now, Done: done, Error: s.errorText(err)}
	if err != nil && s.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// A rolling restart is no failure of the task's: three of them must
		// not raise "failed 3 times in a row".
		run.Stopped, run.Error = true, "stopped before it ended: syncdesk was stopping"
	}
	s.finish(c, run)
}

// keepLease renews a run's lease every third of it until ctx ends. A claim
// that is no longer the task's (another instance took the task) cancels the
// run, and so does a lease that ran out while renewals failed (say, the
// database was unreachable): another instance may take the task then, and
// two runs must not overlap. The channel closes when it stops.
func (s *Scheduler) keepLease(ctx context.Context, cancel context.CancelFunc, c models.TaskClaim) <-chan struct{} {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(s.opts.Lease / 3)
		defer t.Stop()
		until := c.Until
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := s.opts.Clock.Now()
			held, err := models.RenewTask(s.opts.DB.WithContext(ctx), c.Name, c.Token, now.Add(s.opts.Lease))
			switch {
			case err == nil && held:
				until = now.Add(s.opts.Lease)
			case err == nil:
				s.opts.Log.Warn("scheduled task lost its lease mid-run; stopping it", "task", c.Name, "instance", c.Instance)
				cancel()
				return
			case ctx.Err() != nil:
				return
			case !now.Before(until):
				s.opts.Log.Warn("scheduled task's lease ran out while it could not be renewed; stopping it",
					"task", c.Name, "instance", c.Instance, "err", err)
				cancel()
				return
			default:
				s.opts.Log.Warn("renew a scheduled task's lease", "task", c.Name, "err", err)
			}
		}
	}()
	return stopped
}

// finish records a run's outcome. It is written even while the scheduler
// stops, so that a run cut short frees its task at once.
func (s *Scheduler) finish(c models.TaskClaim, r models.TaskRun) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 5*time.Second)
	defer cancel()
	held, err := models.FinishTask(s.opts.DB.WithContext(ctx), c.Name, c.Token, r)
	switch {
	case err != nil:
		s.opts.Log.Warn("scheduled task: cannot record its run", "task", c.Name, "err", err)
	case !held:
		s.opts.Log.Warn("scheduled task ended after its lease ran out; its outcome is not recorded", "task", c.Name)
	}
}

// rows reads the shared tasks' rows by name.
func (s *Scheduler) rows(ctx context.Context) (map[string]models.ScheduledTask, error) {
	list, err := models.ListScheduledTasks(s.opts.DB.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	out := make(map[string]models.ScheduledTask, len(list))
	for _, r := range list {
		out[r.Name] = r
	}
	return out, nil
}

// sharedState is a shared task's state as its row has it.
func sharedState(t Task, r models.ScheduledTask, now time.Time) State {
	st := State{Name: t.Name, Every: t.Every, LastError: r.LastError, LastInstance: r.LastInstance,
		Runs: r.Runs, NextRun: r.NextRunAt, Running: r.Running(now)}
	st.LastStarted, st.LastDone = deref(r.LastStartedAt), deref(r.LastDoneAt)
	if st.Running {
		st.RunningOn, st.RunningSince = r.RunningOn, deref(r.RunningSince)
	}
	return st
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
