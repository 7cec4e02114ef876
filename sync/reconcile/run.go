package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
)

// run is one reconciliation in progress on this instance.
type run struct {
	r      *Reconciler
	svc    Service
	row    models.ReconciliationRun
	o      RunOptions
	groups []listGroup
	types  []string // the local types listed

	remoteEstimate, localTotal int64 // what the progress bar expects of each side
	listed                     int64
	expected, scanned          int64
	awaiting                   bool // the fix phase stopped at the safety valve
}

// begin checks the service, sweeps crashed runs, and inserts the running
// run — or returns models.ErrRunActive when one is already running.
func (r *Reconciler) begin(ctx context.Context, name string, o RunOptions) (*run, error) {
	svc, ok := r.services[name]
	if !ok {
		return nil, fmt.Errorf("no service named %q is configured: %w", name, models.ErrNotFound)
	}
	groups := listGroups(svc)
	if len(groups) == 0 {
		return nil, models.Invalid(fmt.Sprintf("%s has no list endpoint for any type: it cannot be reconciled", name))
	}
	if _, err := r.Sweep(ctx); err != nil {
		return nil, err
	}
	now := r.clock.Now()
	rn := &run{r: r, svc: svc, o: o, groups: groups, types: typesOf(groups)}
	rn.row = models.ReconciliationRun{Service: name, DryRun: o.DryRun, TriggeredBy: o.TriggeredBy,
		Owner: r.opts.WorkerID, HeartbeatAt: &now, StartedAt: now}
	// The insert is not cancelled with ctx: a cancel that lands after the
	// database committed it would leave a run marked running that nobody
	// ends (until its heartbeat goes stale). Once begun, a cancelled run
	// ends interrupted at once.
	if err := models.StartRun(r.db.WithContext(context.WithoutCancel(ctx)), &rn.row); err != nil {
		return nil, err
	}
	r.log.Info("reconciliation started", "service", name, "run", rn.row.ID, "dry_run", o.DryRun, "by", o.TriggeredBy)
	return rn, nil
}

// execute runs steps under a heartbeat, then writes how the run ended.
func (rn *run) execute(parent context.Context, steps func(context.Context) error) (*models.ReconciliationRun, error) {
	ctx, cancel, release := rn.watch(parent)
	defer release()
	return rn.executeIn(ctx, cancel, steps)
}

// watch derives the run's context, which Cancel can stop from now on;
// release forgets it.
func (rn *run) watch(parent context.Context) (context.Context, context.CancelCauseFunc, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	rn.r.track(rn.row.ID, cancel)
	return ctx, cancel, func() { rn.r.untrack(rn.row.ID); cancel(nil) }
}

func (rn *run) executeIn(ctx context.Context, cancel context.CancelCauseFunc, steps func(context.Context) error) (*models.ReconciliationRun, error) {
	stopBeat := rn.heartbeat(ctx, cancel)
	err := steps(ctx)
	stopBeat()
	return rn.end(ctx, err)
}

// heartbeat says the run is alive every Options.Heartbeat until stopped. If
// the run is no longer running in the database (a sweep took it for dead),
// it cancels the run with models.ErrRunLost.
func (rn *run) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(rn.r.opts.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if err := models.RunHeartbeat(rn.r.db.WithContext(ctx), rn.row.ID, rn.r.clock.Now()); errors.Is(err, models.ErrRunLost) {
					cancel(err)
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// end writes the run's final status: completed (or awaiting confirmation),
// interrupted when it was stopped, failed on any other error. The write
// outlives a cancelled ctx: a stopped run must say so at once.
func (rn *run) end(ctx context.Context, err error) (*models.ReconciliationRun, error) {
	status, reason := models.RunCompleted, ""
	if rn.awaiting {
		status = models.RunAwaiting
	}
	switch {
	case err == nil: // finished, even if a stop came just after
	case ctx.Err() != nil:
		err = context.Cause(ctx)
		status, reason = models.RunInterrupted, stopReason(err)
	default:
		status, reason = models.RunFailed, err.Error()
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	db := rn.r.db.WithContext(wctx)
	var ferr error
	if !errors.Is(err, models.ErrRunLost) { // else a sweep already wrote the end
		ferr = rn.writeEnd(wctx, db, status, reason)
	}
	cerr := models.ClearSeen(db, rn.row.ID)
	row, gerr := models.RunByID(db, rn.row.ID)
	rn.r.log.Info("reconciliation ended", "service", rn.svc.Name, "run", rn.row.ID, "status", status,
		"scanned", rn.scanned, "fixed", row.Fixed, "error", reason)
	return row, errors.Join(err, ferr, cerr, gerr)
}

// writeEnd writes the run's end, trying again while wctx lasts: a run left
// marked running would bar the service's next run until its heartbeat went
// stale, and a moment without a connection (a restarting database, a full
// pool) is the usual reason a write fails at a stop. ErrRunLost on a second
// try means the first one committed before its answer was lost.
func (rn *run) writeEnd(wctx context.Context, db *gorm.DB, status, reason string) error {
	wait := 50 * time.Millisecond
	for try := 1; ; try++ {
		err := models.FinishRun(db, rn.row.ID, status, reason, rn.r.clock.Now())
		switch {
		case err == nil, try > 1 && errors.Is(err, models.ErrRunLost):
			return nil
		case errors.Is(err, models.ErrRunLost):
			return err
		}
		rn.r.log.Warn("could not write how a reconciliation ended; trying again", "run", rn.row.ID, "try", try, "err", err)
		if !clock.Sleep(wctx, wait) {
			return err
		}
		wait = min(2*wait, time.Second)
	}
}

func stopReason(cause error) string {
	if errors.Is(cause, errStopped) {
		return "stopped by an operator; the next run starts afresh"
	}
	if errors.Is(cause, models.ErrRunLost) {
		return cause.Error()
	}
	return "stopped before it finished (shutdown or cancel); the next run starts afresh"
}

// progress writes expected and scanned, which is also a heartbeat.
func (rn *run) progress(ctx context.Context) error {
	return models.RunProgress(rn.r.db.WithContext(ctx), rn.row.ID, rn.expected, rn.scanned, rn.listed, rn.r.clock.Now())
}

// scan is a whole run: estimate, list, compare, fix.
func (rn *run) scan(ctx context.Context) error {
	db := rn.r.db.WithContext(ctx)
	var err error
	if rn.localTotal, err = models.CountRecords(db, rn.types); err != nil {
		return fmt.Errorf("count records: %w", err)
	}
	if rn.remoteEstimate, err = models.CountRemoteLinks(db, rn.svc.Name, rn.types); err != nil {
		return fmt.Errorf("count links: %w", err)
	}
	rn.expected = rn.remoteEstimate + rn.localTotal
	if err := rn.progress(ctx); err != nil {
		return err
	}
	for _, step := range []func(context.Context) error{rn.listAll, rn.compareAll, rn.remoteOnly} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	if rn.o.DryRun {
		return nil
	}
	limit := maxFixes(rn.svc.Config.Reconcile)
	if rn.o.Confirmed {
		limit = -1
	}
	return rn.fixAll(ctx, limit)
}

func (r *Reconciler) track(id int64, cancel context.CancelCauseFunc) {
	r.mu.Lock()
	r.cancel[id] = cancel
	r.mu.Unlock()
}

func (r *Reconciler) untrack(id int64) {
	r.mu.Lock()
	delete(r.cancel, id)
	r.mu.Unlock()
}
