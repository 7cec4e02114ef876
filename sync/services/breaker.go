package services

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// flushEvery is how long the calls a provider answered wait in an
// instance's tally before they are written to the breaker's row. Failures
// are written at once: the call that opens the breaker must know it did.
const flushEvery = time.Second

// dbTimeout bounds each statement on a breaker's row.
const dbTimeout = 2 * time.Second

// Breakers are the circuit breakers of the configured services: a service
// whose provider fails a run of calls, or a share of them over a window,
// pauses itself (an automatic pause, by models.AutomaticPauser, with the
// reason in words), and while it is paused one call per probe interval, all
// instances together, tests the provider; the first it answers resumes the
// service. The state is one row per service in service_breakers, changed by
// conditional UPDATEs on the database's clock, so three instances open a
// breaker once and probe once an interval in all.
//
// sony/gobreaker's DistributedCircuitBreaker was weighed and left out: it
// holds a store-wide lock across every call it guards (one call at a time
// over all instances, where the engine sends 64 at once on each), keeps its
// times on each machine's clock, and writes the whole state back after each
// call. A breaker here needs only counts added to a row, and a probe taken
// from it.
//
// Safe for concurrent use.
type Breakers struct {
	db     *gorm.DB
	pauser *Pauser
	log    *slog.Logger
	clock  clock.Clock
	// at pins the breakers' clock for tests; nil keeps the database's.
	at  func() time.Time
	svc map[string]*breaker
}

// breaker is one service's: the calls this instance has not yet written,
// and when to ask for a probe again.
type breaker struct {
	name   string
	cfg    config.Breaker
	limits models.BreakerLimits

	mu        sync.Mutex
	pending   models.BreakerTally
	waiters   []chan bool // failures waiting for the write that counts them
	flushing  bool
	flushedAt time.Time
	nextProbe time.Time // local clock: no probe asked for before
}

// BreakerOptions tune Breakers; the zero value is the production setting.
type BreakerOptions struct {
	// At replaces the database's clock in the breakers' statements
	// (tests that move a fake clock); nil keeps the database's.
	At func() time.Time
}

// NewBreakers returns the breakers of the services in cfgs whose breaker
// is not off. clk is this instance's clock, for when to ask again.
func NewBreakers(db *gorm.DB, cfgs map[string]config.Breaker, pauser *Pauser, clk clock.Clock, log *slog.Logger, opts BreakerOptions) *Breakers {
	b := &Breakers{db: db, pauser: pauser, log: log, clock: clk, at: opts.At, svc: map[string]*breaker{}}
	for name, cfg := range cfgs {
		if cfg.Off {
			continue
		}
		b.svc[name] = &breaker{name: name, cfg: cfg,
			limits: models.BreakerLimits{Consecutive: cfg.Consecutive, Ratio: cfg.Ratio, MinCalls: cfg.MinCalls, ProbeEvery: cfg.ProbeEvery}}
	}
	return b
}

// Configured gives each service its breaker settings from cfg.
func Configured(cfg config.Config) map[string]config.Breaker {
	out := map[string]config.Breaker{}
	for name, s := range cfg.Services {
		out[name] = s.Breaker
	}
	return out
}

// verdict is what a call says about its provider.
type verdict int

const (
	ignored  verdict = iota // says nothing: throttled, our own stop, a crash of ours
	answered                // the provider answered (a success, or a refusal of the request)
	failed                  // a temporary failure: the provider looks down
)

// judge reads a call as README promises: a 5xx, a timeout (408 too) or no
// answer at all is a failure; a 429, or an answer the service's answers
// read as "later", is the rate limit's to handle; any other answer says
// the provider is up, whatever it refused — an expired token (401, fetched
// again for the next call) or a request with the same key still running
// (409) included. A call that never left (a body that
// cannot be built, a route misconfigured) says nothing of the provider,
// and must not resume a paused service as a probe's answer would.
func judge(c connector.Call) verdict {
	switch {
	case c.Operation == "connector" || strings.HasPrefix(c.Error, "cancelled"):
		return ignored
	case c.HTTPCode == 429 || c.Held:
		// The rate limiter's to handle, as is an answer the service's
		// answers say means "later" (a spent daily allowance, a locked
		// account): the provider is up, but a paused service's test call
		// that met one must not resume it into the same refusal.
		return ignored
	case c.HTTPCode == 0 && c.Class == connector.Permanent:
		return ignored // never sent
	case c.Class == connector.Temporary && (c.HTTPCode == 0 || c.HTTPCode == 408 || c.HTTPCode >= 500):
		return failed
	}
	return answered
}

// answer puts what a failed call got in words that follow "calls in a
// row": "answered 503", "got no answer in time".
func answer(c connector.Call) string {
	switch {
	case c.HTTPCode > 0:
		return fmt.Sprintf("answered %d", c.HTTPCode)
	case strings.HasPrefix(c.Error, "no answer within"):
		return "got no answer in time"
	case strings.HasPrefix(c.Error, "connection refused"):
		return "could not connect"
	case strings.Contains(c.Error, "connection dropped"):
		return "lost the connection"
	}
	return "could not reach the service"
}

// Record counts one call to service, and reports whether its breaker is
// open (this call may be the one that opened it): then the call's failure
// must not use up its link's attempts. A failure waits for the write that
// counts it; any other call is written with the next one.
func (b *Breakers) Record(ctx context.Context, service string, c connector.Call) (open bool) {
	br := b.svc[service]
	v := judge(c)
	if br == nil || v == ignored {
		return false
	}
	br.mu.Lock()
	t := &br.pending
	t.Calls++
	var done chan bool
	if v == failed {
		a := answer(c)
		switch {
		case t.Trailing == 0:
			t.Answer = a
		case t.Answer != a:
			t.Answer = "*"
		}
		t.Failures++
		t.Trailing++
		t.Last = a
		done = make(chan bool, 1)
		br.waiters = append(br.waiters, done)
	} else {
		t.Reset, t.Trailing, t.Answer = true, 0, ""
	}
	if !br.flushing && (done != nil || b.clock.Now().Sub(br.flushedAt) >= flushEvery) {
		br.flushing = true
		go b.flush(br)
	}
	br.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case open = <-done:
		return open
	case <-ctx.Done():
		return false
	}
}

// flush writes the tally until none is left: the failures that arrive
// while one write runs share the next.
func (b *Breakers) flush(br *breaker) {
	for {
		br.mu.Lock()
		t, waiters := br.pending, br.waiters
		br.pending, br.waiters = models.BreakerTally{}, nil
		if t.Calls == 0 {
			br.flushing = false
			br.mu.Unlock()
			return
		}
		br.flushedAt = b.clock.Now()
		br.mu.Unlock()
		open := b.write(br, t)
		for _, w := range waiters {
			w <- open
		}
	}
}

// write adds t to the row and opens the breaker when the counts say so.
func (b *Breakers) write(br *breaker, t models.BreakerTally) (open bool) {
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	db := b.db.WithContext(ctx)
	counts, open, err := models.RecordBreakerCalls(db, br.name, t, br.cfg.Window, b.now())
	if err != nil {
		// The links' attempts are counted as usual: a breaker that cannot
		// be read must not stop retries from ending.
		b.log.Warn("count calls for the breaker", "service", br.name, "err", err)
		return false
	}
	if open {
		// Opened by another instance, whose pause this one's cache may not
		// show yet: read it at the next claim, not after the TTL.
		b.pauser.invalidate()
		return true
	}
	if !br.limits.Trips(counts) {
		return false
	}
	opened, why, err := models.TripBreaker(db, br.name, br.limits, br.reason, b.clock.Now(), b.now())
	if err != nil {
		b.log.Warn("open the breaker", "service", br.name, "err", err)
		return false
	}
	if opened {
		b.pauser.invalidate()
		b.log.Warn("service paused automatically", "service", br.name, "reason", why)
		return true
	}
	// Another instance opened it, or a call it answered meanwhile reset
	// the run: the row says which.
	_, open, err = models.RecordBreakerCalls(db, br.name, models.BreakerTally{}, br.cfg.Window, b.now())
	if err == nil && open {
		b.pauser.invalidate()
	}
	return err == nil && open
}

// reason says in words why the counts opened the breaker.
func (br *breaker) reason(c models.BreakerCounts) string {
	// The run as configured: calls that fail together are counted
	// together, so the row may have passed it by a few.
	if n := br.limits.Consecutive; c.Consecutive >= n {
		if c.RunAnswer != "*" && c.RunAnswer != "" {
			return fmt.Sprintf("paused automatically: %d calls in a row %s", n, c.RunAnswer)
		}
		return fmt.Sprintf("paused automatically: %d calls in a row failed (the last %s)", n, c.LastAnswer)
	}
	return fmt.Sprintf("paused automatically: %d of %d calls in %s failed (the last %s)",
		c.WindowFailures, c.WindowCalls, inWords(br.cfg.Window), c.LastAnswer)
}

// inWords says a window as people do: "5 minutes", "1 hour", "90s".
func inWords(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	switch {
	case d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour")
	case d%time.Minute == 0:
		return plural(int64(d/time.Minute), "minute")
	}
	return d.String()
}

// Probes takes the probes due on this instance: the services paused
// automatically whose next probe, all instances together, is now this
// one's. The engine sends one link of each, its pause notwithstanding, and
// reports the outcome to ProbeDone.
func (b *Breakers) Probes(ctx context.Context) []string {
	pauses, _ := b.pauser.List(ctx)
	var out []string
	for _, p := range pauses {
		br := b.svc[p.Service]
		if br == nil || !p.Automatic() {
			continue
		}
		now := b.clock.Now()
		br.mu.Lock()
		due := !now.Before(br.nextProbe)
		if due {
			br.nextProbe = now.Add(br.cfg.ProbeEvery) // until the database says otherwise
		}
		br.mu.Unlock()
		if !due {
			continue
		}
		taken, wait, err := b.takeProbe(ctx, br)
		if err != nil {
			b.log.Warn("take a probe of a paused service", "service", br.name, "err", err)
			continue
		}
		if taken {
			out = append(out, br.name)
			continue
		}
		br.mu.Lock()
		br.nextProbe = now.Add(min(max(wait, 0), br.cfg.ProbeEvery))
		br.mu.Unlock()
	}
	return out
}

func (b *Breakers) takeProbe(ctx context.Context, br *breaker) (bool, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
	defer cancel()
	return models.TakeProbe(b.db.WithContext(ctx), br.name, br.cfg.ProbeEvery, b.now())
}

// ProbeDone takes a probe's call: one the provider answered closes the
// breaker and resumes the service (unless a person has made the pause
// theirs), and reports true; a failure keeps it paused until the next probe.
func (b *Breakers) ProbeDone(ctx context.Context, service string, c connector.Call) (resumed bool) {
	br := b.svc[service]
	if br == nil || judge(c) != answered {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
	defer cancel()
	detail := fmt.Sprintf("resumed automatically: a test call (%s) was answered %d", c.Operation, c.HTTPCode)
	resumed, err := models.CloseBreaker(b.db.WithContext(ctx), service, detail, b.clock.Now())
	if err != nil {
		b.log.Warn("resume a service after its probe", "service", service, "err", err)
		return false
	}
	if resumed {
		b.pauser.invalidate()
		b.log.Info("service resumed automatically", "service", service, "probe", c.Operation, "http", c.HTTPCode)
	}
	return resumed
}

func (b *Breakers) now() time.Time {
	if b.at == nil {
		return time.Time{}
	}
	return b.at()
}
