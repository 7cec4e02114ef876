package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// flushSize bounds the outcomes written per transaction. Writing many links'
// results in one transaction is what lets the engine outrun the database's
// rate of small transactions.
const flushSize = 256

// finishTries is how many times the writer tries to write a batch of
// outcomes (pausing 0.2 s, then 0.8 s) before it gives them up.
const finishTries = 3

// flushWindow is how long the writer gathers outcomes before it writes them:
// sends that were claimed together finish together, and one transaction for
// all of them costs the database little more than one for the first.
const flushWindow = 5 * time.Millisecond

// queuedBatches is how many claimed batches may wait for a free sender, so
// that none sits idle while the next claim is in flight. The claimer claims
// as soon as a sender's worth of room is free, so the queue seldom holds a
// whole batch; with the default batch of twice the sends in flight, one
// queued batch keeps the depth at three times the sends in flight, which
// bounds how long a claimed link waits for a sender (see leaseCovers).
const queuedBatches = 1

// Run claims and sends due links until ctx ends. Then it stops claiming,
// gives sends in flight up to grace to finish, cancels the rest (their
// attempts are logged as ambiguous), and hands back the leases of links it
// claimed but had not started, so that no link waits for a lease to expire.
func (e *Engine) Run(ctx context.Context, grace time.Duration) error {
	return e.pipeline(ctx, grace, false)
}

// Drain sends until nothing is due at the clock's current time, then
// returns; a stop (ctx) is handled as by Run, with the configured grace. The
// scheduled "send" task calls it every second on every instance.
func (e *Engine) Drain(ctx context.Context) error {
	return e.pipeline(ctx, e.opts.Grace, true)
}

// pipeline: one claimer, Concurrency senders, one writer.
func (e *Engine) pipeline(ctx context.Context, grace time.Duration, untilIdle bool) error {
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-time.After(grace):
				cancelSends()
			case <-sendCtx.Done():
			}
		case <-sendCtx.Done():
		}
	}()

	p := &pipe{e: e, jobs: make(chan job, queuedBatches*e.opts.BatchSize), results: make(chan models.LinkOutcome, e.opts.Concurrency),
		freed: make(chan struct{}, 1), held: map[*heldLease]struct{}{}}
	var senders sync.WaitGroup
	for range e.opts.Concurrency {
		senders.Add(1)
		go func() { defer senders.Done(); p.sendLoop(ctx, sendCtx) }()
	}
	keepCtx, stopKeeping := context.WithCancel(context.Background())
	var keeper sync.WaitGroup
	keeper.Go(func() { p.keepLeases(keepCtx) })
	writeErr := make(chan error, 1)
	go func() { writeErr <- p.writeLoop() }()

	claimErr := p.claimLoop(ctx, untilIdle)
	close(p.jobs)
	senders.Wait()
	stopKeeping()
	keeper.Wait()
	close(p.results)
	return errors.Join(claimErr, <-writeErr)
}

type pipe struct {
	e       *Engine
	jobs    chan job
	results chan models.LinkOutcome
	freed   chan struct{}
	// dbTurn makes this engine's claims and writes take turns on SQLite,
	// which lets one writer in at a time anyway: queued here, the next one
	// starts as soon as the last commits, instead of after a busy-handler sleep.
	dbTurn sync.Mutex

	mu        sync.Mutex
	unsent    int                     // claimed, not yet handed to the writer
	unwritten int                     // claimed, outcome not yet written
	held      map[*heldLease]struct{} // the leases of the jobs in the senders (lease.go)
}

// claimed counts n links claimed.
func (p *pipe) claimed(n int) {
	p.mu.Lock()
	p.unsent += n
	p.unwritten += n
	p.mu.Unlock()
}

// sent counts one outcome handed to the writer, which frees a place for
// the claimer: room does not wait for the write.
func (p *pipe) sent() {
	p.mu.Lock()
	p.unsent--
	p.mu.Unlock()
	p.signal()
}

// written counts n outcomes written.
func (p *pipe) written(n int) {
	p.mu.Lock()
	p.unwritten -= n
	p.mu.Unlock()
	p.signal()
}

func (p *pipe) signal() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

func (p *pipe) room() (room, unwritten int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Keep up to queuedBatches batches queued beyond the senders. Outcomes
	// waiting to be written do not count: the results channel's bound holds
	// them back instead.
	return p.e.opts.Concurrency + queuedBatches*p.e.opts.BatchSize - p.unsent, p.unwritten
}

// turn serialises this engine's write transactions on SQLite.
func (p *pipe) turn() (done func()) {
	if models.Dialect(p.e.db) != models.SQLite {
		return func() {}
	}
	p.dbTurn.Lock()
	return p.dbTurn.Unlock
}

func (p *pipe) claimLoop(ctx context.Context, untilIdle bool) error {
	e := p.e
	for ctx.Err() == nil {
		room, unwritten := p.room()
		if room >= min(e.opts.BatchSize, e.opts.Concurrency) {
			n, err := p.claim(ctx, min(room, e.opts.BatchSize))
			if err != nil && ctx.Err() == nil {
				e.log.Error("claim failed", "err", err)
				if untilIdle {
					return err
				}
			}
			if n > 0 {
				continue
			}
			if untilIdle && unwritten == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
		case <-p.freed:
		case <-e.wake:
		case <-time.After(e.opts.Poll):
		}
	}
	return nil
}

// claim takes up to limit due links and queues them for the senders.
//
// The database work does not stop with ctx: a claim cancelled between its
// commit and the queueing would leave links under a lease nobody works on
// until it expires. Once claimed, a link is always queued; at a stop the
// senders hand it straight back.
func (p *pipe) claim(stop context.Context, limit int) (int, error) {
	e := p.e
	if stop.Err() != nil {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(stop), 30*time.Second)
	defer cancel()
	probes, err := p.claimProbes(ctx, limit)
	if err != nil || len(probes) == limit {
		return len(probes), err
	}
	done := p.turn()
	now := e.clock.Now()
	links, err := models.ClaimDue(e.db.WithContext(ctx), e.leaseToken(), now, e.opts.Lease, limit-len(probes), e.notNow())
	done()
	if err != nil || len(links) == 0 {
		return len(probes), err
	}
	p.queue(links, now, false)
	return len(probes) + len(links), nil
}

// heldConnector is a connector whose calls its provider may hold off for a
// while (connector.HTTP behind its rate limiter: a Retry-After, a spent
// allowance the service's answers read).
type heldConnector interface{ HeldFor() time.Duration }

// notNow names the services whose links are not claimed now: those paused,
// and those whose every call is held. A held service's links, claimed,
// would only wait in the senders for the hold to end (up to the limiter's
// longest block), and a service with a backlog would keep every sender
// from the other services meanwhile. They are claimed once the hold ends.
func (e *Engine) notNow() []string {
	out := slices.Clone(e.paused())
	for name, s := range e.services {
		if h, ok := s.Conn.(heldConnector); ok && h.HeldFor() > 0 && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// claimProbes claims one due link of each paused service whose probe is
// this engine's to send: the call that tests whether its provider is back.
func (p *pipe) claimProbes(ctx context.Context, limit int) ([]models.ClaimedLink, error) {
	e := p.e
	if e.breaker == nil {
		return nil, nil
	}
	var out []models.ClaimedLink
	for _, service := range e.breaker.Probes(ctx) {
		if len(out) == limit {
			break // its probe waits for the next interval
		}
		done := p.turn()
		now := e.clock.Now()
		links, err := models.ClaimDueOf(e.db.WithContext(ctx), e.leaseToken(), now, e.opts.Lease, service, 1)
		done()
		if err != nil {
			return out, err
		}
		p.queue(links, now, true)
		out = append(out, links...)
	}
	return out, nil
}

// queue hands claimed links to the senders.
func (p *pipe) queue(links []models.ClaimedLink, now time.Time, probe bool) {
	p.e.observeClaim(links, now)
	p.claimed(len(links))
	for _, l := range links {
		p.jobs <- job{link: l.Link, payload: l.Payload, hash: l.ContentHash, probe: probe, requested: l.Requested}
	}
}

func (p *pipe) sendLoop(stop, sendCtx context.Context) {
	for j := range p.jobs {
		now := p.e.clock.Now()
		switch {
		case stop.Err() != nil:
			p.results <- handBack(j, now)
		case !p.e.leaseCovers(j, now):
			p.e.log.Warn("lease ran short while the link waited for a sender; handed back unsent",
				"service", j.link.ExternalService, "link", j.link.ID)
			p.results <- handBack(j, now)
		default:
			h := p.hold(j, now)
			ready := func(ctx context.Context) error { return p.ready(ctx, h) }
			p.results <- p.e.send(connector.WithReady(sendCtx, ready), j)
			p.unhold(h)
		}
		p.sent()
	}
}

// leaseSpare is the lease a send must leave over when it ends: time to
// write its outcome, and for clocks that differ between instances.
const leaseSpare = 5 * time.Second

// leaseCovers reports whether a claimed link's lease outlasts the longest
// send of it — a lookup and a create, each up to the service's timeout —
// with leaseSpare to spare. The lease runs from the claim, and a job may
// wait behind slow sends in this engine's queue: once the lease has run
// out, a rescuer hands the link to another worker, and a send started
// now would race that worker's (two creates, or an old update written over
// a newer one).
func (e *Engine) leaseCovers(j job, now time.Time) bool {
	if j.link.LockedUntil == nil {
		return false
	}
	return j.link.LockedUntil.Sub(now) >= e.longestSend(j.link.ExternalService)+leaseSpare
}

// longestSend is the longest a send to service may take: a lookup and a
// create, each up to the service's timeout.
func (e *Engine) longestSend(service string) time.Duration {
	return 2 * e.services[service].Config.Timeout
}

// handBack returns a claimed link that was never sent to the queue as it was.
func handBack(j job, now time.Time) models.LinkOutcome {
	status := models.StatusRetry
	if j.link.Attempts == 0 {
		status = models.StatusNew
	}
	return models.LinkOutcome{Link: j.link, Status: status, Attempts: j.link.Attempts, NextAttempt: now,
		NeedsLookup: j.link.NeedsLookup, DeleteUnknown: j.link.DeleteUnknown, LastError: j.link.LastError, LastHTTP: j.link.LastHTTPCode}
}

// writeLoop writes outcomes in batches: those that arrive within
// flushWindow of the first, up to flushSize.
func (p *pipe) writeLoop() error {
	var errs []error
	batch := make([]models.LinkOutcome, 0, flushSize)
	window := time.NewTimer(flushWindow)
	for o := range p.results {
		batch = append(batch[:0], o)
		window.Reset(flushWindow)
	more:
		for len(batch) < flushSize {
			select {
			case o, ok := <-p.results:
				if !ok {
					break more
				}
				batch = append(batch, o)
			case <-window.C:
				break more
			}
		}
		window.Stop()
		if err := p.flush(batch); err != nil {
			errs = append(errs, err)
		}
		p.written(len(batch))
	}
	return errors.Join(errs...)
}

func (p *pipe) flush(batch []models.LinkOutcome) error {
	e := p.e
	// Finishing must not be cancelled with the run: an outcome not written
	// would leave its link waiting for the lease to expire.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stale int
	var err error
	// A database that fails over or restarts refuses a write for a moment:
	// try again before giving the outcomes up (their links would wait for
	// the lease to run out, and their attempts would be missing from the log).
	for try, pause := 1, 200*time.Millisecond; ; try, pause = try+1, 4*pause {
		done := p.turn()
		stale, err = models.FinishLinks(e.db.WithContext(ctx), batch, e.clock.Now())
		done()
		if err == nil || try == finishTries || !clock.Sleep(ctx, pause) {
			break
		}
		e.log.Warn("write outcomes failed; trying again", "links", len(batch), "try", try, "err", err)
	}
	if err != nil {
		e.log.Error("write outcomes", "links", len(batch), "err", err)
		return fmt.Errorf("write %d outcomes: %w", len(batch), err)
	}
	if stale > 0 {
		e.log.Warn("outcomes for links whose lease was taken over", "links", stale)
	}
	e.observe(batch)
	return nil
}
