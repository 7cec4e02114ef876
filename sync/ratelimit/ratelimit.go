// Package ratelimit paces the calls to one service: a request rate shared
// by every instance on the database (one row per service in rate_limits),
// a bound on the requests in flight per instance, and what the provider's
// own headers say (Retry-After, X-HubSpot-RateLimit-*, RateLimit-*,
// X-RateLimit-*), so that syncdesk slows down before it is refused.
//
// Until a service's limit is known — configured, or learned from an
// answer's headers by any instance — one request at a time is in flight
// on each instance: a backlog must not fire 64 requests at a provider
// whose limit nobody knows yet. A service with no limit configured and no
// rate headers in its answers costs no database round trip per request.
package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
)

// Options tune a Limiter; the zero value is the production setting.
type Options struct {
	// Clock tells the local time for sleeps and blocks (default the wall
	// clock). Turns are counted on the database's clock.
	Clock clock.Clock
	// Logger receives what the limiter learns and its database trouble
	// (default slog.Default()).
	Logger *slog.Logger
	// Refresh is how often a service without a rate reads its row again,
	// to see a block or a limit another instance wrote (default 1s).
	Refresh time.Duration
	// DBTimeout bounds each database statement (default 2s).
	DBTimeout time.Duration
	// RetryDB is how long the limiter paces alone after a database error
	// before it tries the database again (default 5s).
	RetryDB time.Duration
	// MaxBlock caps any block a provider asks for (default 15m): a
	// Retry-After of a year must not stop a service for a year.
	MaxBlock time.Duration
	// Metrics counts the time calls wait (NewMetrics); nil counts nothing.
	Metrics *Metrics
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Refresh = cmpOr(o.Refresh, time.Second)
	o.DBTimeout = cmpOr(o.DBTimeout, 2*time.Second)
	o.RetryDB = cmpOr(o.RetryDB, 5*time.Second)
	o.MaxBlock = cmpOr(o.MaxBlock, 15*time.Minute)
	return o
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Limiter paces the calls to one service. Safe for concurrent use.
type Limiter struct {
	db      *gorm.DB
	service string
	cfg     config.RateLimit
	opts    Options
	log     *slog.Logger

	conc     *semaphore.Weighted // rate_limit.concurrent; nil for no bound
	probe    *semaphore.Weighted // one request in flight until the limit is known
	known    atomic.Bool
	inFlight atomic.Int64

	mu     sync.Mutex
	shared sharedState
	turns  turns
}

// New returns the limiter of service. It touches the database only at the
// first Wait, which gives the service its row.
func New(db *gorm.DB, service string, cfg config.RateLimit, opts Options) *Limiter {
	opts = opts.withDefaults()
	l := &Limiter{db: db, service: service, cfg: cfg, opts: opts, probe: semaphore.NewWeighted(1),
		log: opts.Logger.With("service", service)}
	if cfg.Concurrent > 0 {
		l.conc = semaphore.NewWeighted(int64(cfg.Concurrent))
	}
	l.known.Store(cfg.PerSecond > 0)
	return l
}

// Wait paces the calls to one service: it blocks until a request may go
// (ctx ending first returns ctx.Err()) and returns done, which must be
// called once with the response (nil when none came), so the limiter
// learns from its status and headers and frees the request's slot. Call
// Wait before starting the request's own timeout: a turn may be seconds
// away. A nil Limiter lets every request go.
func (l *Limiter) Wait(ctx context.Context) (done func(*http.Response), err error) {
	if l == nil {
		return func(*http.Response) {}, nil
	}
	// A call given up while it waited waited all the same.
	start := l.opts.Clock.Now()
	defer func() { l.opts.Metrics.observe(l.service, l.opts.Clock.Now().Sub(start)) }()
	release, probing, err := l.slot(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.pace(ctx); err != nil {
		release()
		return nil, err
	}
	l.inFlight.Add(1)
	var once sync.Once
	return func(res *http.Response) {
		once.Do(func() {
			l.inFlight.Add(-1)
			l.observe(res, probing)
			release()
		})
	}, nil
}

// slot takes the request's place among those in flight on this instance:
// one of rate_limit.concurrent, and the only one while the limit is not
// known. probing says it is that only one.
func (l *Limiter) slot(ctx context.Context) (release func(), probing bool, err error) {
	if l.conc != nil {
		if err := l.conc.Acquire(ctx, 1); err != nil {
			return nil, false, err
		}
	}
	releaseConc := func() {
		if l.conc != nil {
			l.conc.Release(1)
		}
	}
	if l.known.Load() {
		return releaseConc, false, nil
	}
	if err := l.probe.Acquire(ctx, 1); err != nil {
		releaseConc()
		return nil, false, err
	}
	if l.known.Load() { // learned while this one queued
		l.probe.Release(1)
		return releaseConc, false, nil
	}
	return func() { l.probe.Release(1); releaseConc() }, true, nil
}

// pace sleeps until the request's turn.
func (l *Limiter) pace(ctx context.Context) error {
	d, err := l.delay(ctx)
	if err != nil {
		return err
	}
	if d <= 0 {
		return ctx.Err()
	}
	if deadline, ok := ctx.Deadline(); ok && l.opts.Clock.Now().Add(d).After(deadline) {
		return fmt.Errorf("%s's next turn is in %v, after this call's deadline: %w", l.service, d.Round(time.Millisecond), context.DeadlineExceeded)
	}
	if !clock.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// Hold holds every instance off the service for d (at most MaxBlock, which
// syncdesk sets to the service's retry.max), for
// an answer the service's configuration reads as "later" whatever its
// headers say (a Salesforce org's spent allowance answers 403, with no
// Retry-After). A nil Limiter holds nothing.
func (l *Limiter) Hold(d time.Duration, reason string) {
	if l == nil || d <= 0 {
		return
	}
	l.block(min(d, l.opts.MaxBlock), reason)
}

// HeldFor says how much longer every call to the service is held (a
// Retry-After, a spent window, an answer's hold), as this instance last
// read the shared row; 0 when it is not. The engine claims no link of a
// held service: sent, it would only wait in a sender, and a long hold would
// keep every sender from the other services. A nil Limiter holds nothing.
func (l *Limiter) HeldFor() time.Duration {
	if l == nil {
		return 0
	}
	now := l.opts.Clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.shared.blockedUntil.Sub(now), 0)
}

// observe learns from an answer: a limit to keep to, a window with nothing
// left, a refusal with a time to come back. The first answer that is not a
// refusal ends the one-at-a-time start: its headers taught the limit, or
// it had none to teach.
func (l *Limiter) observe(res *http.Response, probing bool) {
	if res == nil {
		return
	}
	now := l.opts.Clock.Now()
	sig := parseSignal(res, now)
	if sig.limit > 0 {
		l.learn(sig)
	}
	if d, reason := l.blockFor(sig, res.StatusCode); d > 0 {
		l.block(min(d, l.opts.MaxBlock), reason)
	}
	if !sig.throttled && !l.known.Load() {
		l.known.Store(true)
		if probing && !sig.headers {
			l.log.Debug("no rate limit headers in the first answer: requests go without waiting for each other")
		}
	}
}

// blockFor says how long every instance must hold off after an answer: a
// refusal's Retry-After (or the window's end), or the window's end when no
// more requests remain in it than this instance has in flight already.
func (l *Limiter) blockFor(sig signal, status int) (time.Duration, string) {
	window := sig.window
	if window == 0 {
		window = l.learnedWindow()
	}
	wait := firstPositive(sig.reset, window, time.Second)
	switch {
	case sig.throttled && sig.retryAfter > 0:
		return sig.retryAfter, fmt.Sprintf("%d %s, Retry-After %v", status, http.StatusText(status), sig.retryAfter)
	case sig.throttled:
		return wait, fmt.Sprintf("%d %s", status, http.StatusText(status))
	case sig.remaining >= 0 && sig.remaining <= l.inFlight.Load():
		return wait, fmt.Sprintf("%d requests remaining in the provider's window (%s)", sig.remaining, sig.source)
	}
	return 0, ""
}

func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}
