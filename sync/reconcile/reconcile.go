// Package reconcile compares each service's objects with our records and
// links, reports what differs as discrepancies, and fixes what is safe to
// fix — through the outbox's own state, never by calling a provider's write
// endpoints itself.
//
// A run has three phases, each in bounded memory:
//
//  1. List: page through the provider's objects (each distinct list
//     endpoint once) and store every object that carries one of our keys in
//     the scratch table reconcile_seen, a page at a time. The provider's
//     order is not ours, so rather than sort both sides in memory, the
//     database holds the remote side and answers lookups by key with an index.
//  2. Compare: walk the records of each listed type in batches along
//     (local_type, local_id), reading their links and listed objects by the
//     same range of ids, and decide per record (decide, a pure function).
//     Then walk the listed keys that name no record at all. Discrepancies
//     are written per batch.
//  3. Fix: apply the open discrepancies in batches, safest kind first, up to
//     the service's safety valve; beyond it the run waits for an operator's
//     Confirm.
//
// Progress (expected, scanned) and a heartbeat are written as it goes. A
// stop ends the run as interrupted at once; a crash is found by Sweep from
// the stale heartbeat. At most one run per service is running, by a partial
// unique index, whichever instance starts it.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Lister reads a provider's objects a page at a time; connector.HTTP is one.
type Lister interface {
	List(ctx context.Context, localType, cursor string) (connector.Page, connector.Call)
}

// Service is a configured service with the connector that lists its objects.
type Service struct {
	Name   string
	Config config.Service
	Conn   Lister
}

// Options tune the reconciler; zero values take the defaults.
type Options struct {
	WorkerID     string        // names this instance in runs' owner column (default host-pid)
	Batch        int           // records compared, and fixes applied, per transaction (default 500)
	Heartbeat    time.Duration // how often a running run says it is alive (default 15 s)
	StaleAfter   time.Duration // a running run silent this long is taken for crashed (default 2 min)
	ListAttempts int           // tries per page before a run fails (default 3)
	// Redactor masks what a finding keeps of a field's values (default:
	// the built-in rules).
	Redactor *redact.Redactor
}

// RunOptions say how one run goes.
type RunOptions struct {
	DryRun      bool   // report only: nothing is fixed
	TriggeredBy string // who or what started it: a user's email, "scheduler"
	Confirmed   bool   // an operator asked for every fix up front: no safety valve
}

// Reconciler runs reconciliations. One per process; safe for concurrent use.
type Reconciler struct {
	db       *gorm.DB
	services map[string]Service
	clock    clock.Clock
	log      *slog.Logger
	opts     Options
	redact   *redact.Redactor

	base   context.Context // runs live under it; Close cancels it
	stop   context.CancelFunc
	wg     sync.WaitGroup // runs in progress here; Add only under mu while open
	mu     sync.Mutex
	closed bool
	cancel map[int64]context.CancelCauseFunc // runs in progress here, by id
}

// errStopped is the cause of a run an operator stopped.
var errStopped = errors.New("stopped by an operator")

// ErrClosed refuses a run asked of a reconciler that was closed: the
// process is stopping, and a run started now could write after the
// database is closed.
var ErrClosed = errors.New("syncdesk is stopping: no reconciliation can start now")

// New builds a reconciler over the given services.
func New(db *gorm.DB, services []Service, clk clock.Clock, log *slog.Logger, opts Options) *Reconciler {
	if opts.WorkerID == "" {
		host, _ := os.Hostname()
		opts.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 2 * time.Minute
	}
	if opts.ListAttempts <= 0 {
		opts.ListAttempts = 3
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New(nil)
	}
	r := &Reconciler{db: db, services: map[string]Service{}, clock: clk, log: log, opts: opts, redact: opts.Redactor,
		cancel: map[int64]context.CancelCauseFunc{}}
	r.base, r.stop = context.WithCancel(context.Background())
	for _, s := range services {
		r.services[s.Name] = s
	}
	return r
}

// Reconcilable lists the services that can be reconciled — those with at
// least one routed type that has a list endpoint — sorted.
func (r *Reconciler) Reconcilable() []string {
	var out []string
	for name, s := range r.services {
		if len(listGroups(s)) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Run reconciles one service and returns the run as it ended. A run that
// could not start returns models.ErrRunActive, models.ErrNotFound or an
// *models.InvalidError; a run that started always ends in a final status,
// and its error, if any, is returned beside it.
func (r *Reconciler) Run(ctx context.Context, service string, o RunOptions) (*models.ReconciliationRun, error) {
	if err := r.hold(); err != nil {
		return nil, err
	}
	defer r.wg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.base, cancel)() // Close interrupts it too
	rn, err := r.begin(ctx, service, o)
	if err != nil {
		return nil, err
	}
	return rn.execute(ctx, rn.scan)
}

// Start begins a run and carries it on in the background, so that a page
// can redirect to it and watch its progress. Close stops it.
func (r *Reconciler) Start(ctx context.Context, service string, o RunOptions) (int64, error) {
	if err := r.hold(); err != nil {
		return 0, err
	}
	rn, err := r.begin(ctx, service, o)
	if err != nil {
		r.wg.Done()
		return 0, err
	}
	ctx, cancel, release := rn.watch(r.base)
	go func() {
		defer r.wg.Done()
		defer release()
		if _, err := rn.executeIn(ctx, cancel, rn.scan); err != nil {
			r.log.Warn("reconciliation ended with an error", "service", service, "run", rn.row.ID, "err", err)
		}
	}()
	return rn.row.ID, nil
}

// Started is a run that StartEvery started.
type Started struct {
	Service string
	RunID   int64
}

// StartEvery starts a run of every reconcilable service, as Start does, on
// who's behalf: an operator's "reconcile everything now", which a schedule's
// own period would not do. A service already being reconciled, here or on
// another instance, is listed in busy and not started twice. Any other
// refusal ends the loop: the runs started before it go on, and are returned
// beside the error.
func (r *Reconciler) StartEvery(ctx context.Context, who string) (started []Started, busy []string, err error) {
	for _, service := range r.Reconcilable() {
		id, err := r.Start(ctx, service, RunOptions{TriggeredBy: who})
		switch {
		case errors.Is(err, models.ErrRunActive):
			busy = append(busy, service)
		case err != nil:
			return started, busy, fmt.Errorf("start reconciliation of %s: %w", service, err)
		default:
			started = append(started, Started{Service: service, RunID: id})
		}
	}
	return started, busy, nil
}

// ErrRunElsewhere refuses to cancel a run that another instance is doing:
// only that instance can stop it.
var ErrRunElsewhere = errors.New("the run is going on another instance")

// Cancel stops a run in progress on this instance; it ends interrupted. A
// run not going here is models.ErrNotFound when there is none, an
// *models.InvalidError when it has ended, and ErrRunElsewhere when another
// instance runs it.
func (r *Reconciler) Cancel(ctx context.Context, runID int64) error {
	if r.cancelHere(runID) {
		return nil
	}
	run, err := models.RunByID(r.db.WithContext(ctx), runID)
	switch {
	case err != nil:
		return err
	case run.Status != models.RunRunning:
		return models.Invalid(fmt.Sprintf("Run %d is not running (it is %s); there is nothing to cancel.", runID, models.RunWord(run.Status)))
	}
	return fmt.Errorf("%w (%s): cancel it there, or wait for it to end", ErrRunElsewhere, run.Owner)
}

// cancelHere cancels a run in progress on this instance, if it is one.
func (r *Reconciler) cancelHere(runID int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cancel, ok := r.cancel[runID]
	if ok {
		cancel(errStopped)
	}
	return ok
}

// hold counts a run about to begin, or refuses it with ErrClosed once Close
// has begun: the WaitGroup never grows while Close waits on it.
func (r *Reconciler) hold() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.wg.Add(1)
	return nil
}

// Close refuses new runs, stops every run in progress here (each ends
// interrupted) and waits for them to write how they ended. Calling it again
// waits again and does nothing else.
func (r *Reconciler) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.stop()
	r.wg.Wait()
}

// Sweep marks runs whose heartbeat went stale as interrupted — their
// instance crashed — and deletes the scratch rows of finished runs. The
// scheduler calls it; every run start calls it too.
func (r *Reconciler) Sweep(ctx context.Context) (int64, error) {
	now := r.clock.Now()
	n, err := models.SweepStaleRuns(r.db.WithContext(ctx), now.Add(-r.opts.StaleAfter), now)
	if n > 0 {
		r.log.Warn("reconciliation runs taken for crashed", "runs", n)
	}
	return n, err
}

// RunDue is the scheduler's task: it sweeps, then runs each reconcilable,
// scheduled service whose last run started at least its period ago. A
// service already running elsewhere is skipped.
func (r *Reconciler) RunDue(ctx context.Context) error {
	if _, err := r.Sweep(ctx); err != nil {
		return err
	}
	var errs []error
	for _, name := range r.Reconcilable() {
		cfg := r.services[name].Config.Reconcile
		if cfg.Manual || ctx.Err() != nil {
			continue
		}
		last, err := models.LatestRun(r.db.WithContext(ctx), name)
		if err == nil && r.clock.Now().Sub(last.StartedAt) < cfg.Period() {
			continue
		}
		if err != nil && !errors.Is(err, models.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		if _, err := r.Run(ctx, name, RunOptions{TriggeredBy: "scheduler"}); err != nil && !errors.Is(err, models.ErrRunActive) {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func maxFixes(c config.Reconcile) int64 {
	if c.MaxFixes <= 0 {
		return 100
	}
	return int64(c.MaxFixes)
}
