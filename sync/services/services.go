// Package services changes what applies to a configured service as a whole:
// for now, pausing and resuming the sending to it.
package services

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
)

// CacheTTL is how long a Pauser trusts what it last read: a pause made on
// another instance stops this one's claims within it.
const CacheTTL = 2 * time.Second

// MaxReason bounds the length of a pause's reason, in characters.
const MaxReason = 200

// readTimeout bounds a refresh of the cache, which the claim loop waits for.
const readTimeout = 2 * time.Second

// Pauser pauses and resumes the sending to services. The state lives in the
// service_pauses table that every instance shares; each Pauser caches it for
// CacheTTL so that the engine's claim loop and every page can ask without a
// query each time. Safe for concurrent use.
type Pauser struct {
	db    *gorm.DB
	known map[string]bool
	clock clock.Clock
	log   *slog.Logger

	mu      sync.Mutex
	pauses  []models.ServicePause
	err     error     // the last read's failure, while its stale answer serves
	fetched time.Time // zero: read again at the next ask
}

// NewPauser returns a Pauser for the configured services named in known.
func NewPauser(db *gorm.DB, known []string, clk clock.Clock, log *slog.Logger) *Pauser {
	p := &Pauser{db: db, known: map[string]bool{}, clock: clk, log: log}
	for _, name := range known {
		p.known[name] = true
	}
	return p
}

// Pause stops claims of links to service on every instance; links already
// being sent finish. A service already paused keeps its first pause, which
// is returned with created false.
func (p *Pauser) Pause(ctx context.Context, service, who, reason string) (held models.ServicePause, created bool, err error) {
	if !p.known[service] {
		return held, false, fmt.Errorf("no service named %q is configured: %w", service, models.ErrNotFound)
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if utf8.RuneCountInString(reason) > MaxReason {
		return held, false, models.Invalid(fmt.Sprintf("Keep the reason under %d characters.", MaxReason))
	}
	held, created, err = models.Pause(p.db.WithContext(ctx),
		models.ServicePause{Service: service, PausedBy: who, PausedAt: p.clock.Now(), Reason: reason})
	if err != nil {
		return held, false, err
	}
	p.invalidate()
	if created {
		p.log.Info("service paused", "service", service, "by", who)
	}
	return held, created, nil
}

// Resume lets claims of links to service start again, and reports whether it
// was paused. Unlike Pause it accepts any name, so that a pause left behind by
// a service since removed from the configuration can still be lifted.
func (p *Pauser) Resume(ctx context.Context, service, who string) (bool, error) {
	was, err := models.Resume(p.db.WithContext(ctx), service)
	if err != nil {
		return false, err
	}
	p.invalidate()
	if was {
		p.log.Info("service resumed", "service", service, "by", who)
	}
	return was, nil
}

// Paused names the paused services. The engine asks at every claim (see
// outbox.Engine.SetPaused); a failed read keeps the last known answer.
func (p *Pauser) Paused() []string {
	pauses, _ := p.List(context.Background())
	names := make([]string, len(pauses))
	for i, ps := range pauses {
		names[i] = ps.Service
	}
	return names
}

// List returns the paused services, the longest-paused first, from a cache
// at most CacheTTL old. When the database cannot be read it returns the last
// known pauses with the error.
func (p *Pauser) List(ctx context.Context) ([]models.ServicePause, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if p.fetched.IsZero() || now.Sub(p.fetched) >= CacheTTL || now.Before(p.fetched) {
		// The lock is held across the read: callers wait for one query
		// instead of each sending their own.
		p.refresh(ctx, now)
	}
	return slices.Clone(p.pauses), p.err
}

// refresh reads the table. Its answer serves every caller, so one caller's
// cancelled request does not cut it short.
func (p *Pauser) refresh(ctx context.Context, now time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	pauses, err := models.ListPauses(p.db.WithContext(ctx))
	p.fetched = now // after a failure too: try again after the TTL, not at every claim
	if err != nil {
		p.log.Warn("read paused services; keeping the last known", "err", err)
		p.err = fmt.Errorf("read paused services: %w", err)
		return
	}
	p.pauses, p.err = pauses, nil
}

// invalidate makes the next ask read the table: this instance sees its own
// changes at once.
func (p *Pauser) invalidate() {
	p.mu.Lock()
	p.fetched = time.Time{}
	p.mu.Unlock()
}
