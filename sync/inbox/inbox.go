// Package inbox takes providers' webhooks exactly once in effect: it verifies
// each delivery's signature, records (provider, event_id) and applies the
// event's effect in one transaction, answers duplicates without effect, and
// lets an operator replay an event deliberately.
package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox/verify"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Errors the web layer turns into statuses.
var (
	// ErrRejected: a missing or bad signature, or a stale timestamp (401).
	ErrRejected = errors.New("webhook rejected")
	// ErrBadEvent: verified, but the event cannot be identified or stored
	// (400): no id, a body that is not a JSON object, a NUL character or
	// invalid UTF-8 in the id or the type.
	ErrBadEvent = errors.New("bad event")
	// ErrUnreadableStored: a stored event's payload can no longer be read
	// as an event, so it cannot be replayed (422).
	ErrUnreadableStored = errors.New("the stored payload cannot be read as an event")
	// ErrNoWebhooks: the event's service takes no webhooks (any more), so
	// there is nothing to replay the event with (409).
	ErrNoWebhooks = errors.New("syncdesk takes no webhooks from this service")
)

// Result tells the provider what happened to its delivery.
type Result struct {
	EventID   string `json:"event_id"`
	Duplicate bool   `json:"duplicate"`
	Outcome   string `json:"outcome"` // applied, ignored or failed (for a duplicate: the first delivery's)
	Note      string `json:"note,omitempty"`
}

// hook is one service's webhook settings, resolved at start.
type hook struct {
	verify  verify.Config
	effects map[string]Effect
}

// Receiver accepts webhooks for the configured services.
type Receiver struct {
	db     *gorm.DB
	hooks  map[string]hook
	clock  clock.Clock
	log    *slog.Logger
	redact *redact.Redactor

	mu       sync.Mutex
	lastWarn map[string]time.Time

	// writer, on SQLite only, lets one webhook transaction at a time ask for
	// the database's single write lock. Writers that queue here are handed
	// the turn the moment it is free; writers that queue in SQLite's busy
	// handler instead sleep in growing steps (1, 2, 5, 10 … 100 ms) while the
	// lock sits free, which cost a third of the throughput under concurrent
	// deliveries. Other processes and other writers still meet the busy timeout.
	writer chan struct{}
}

// New builds a receiver for every service that has a webhook configured,
// refusing a configuration the verifier cannot use (e.g. a malformed
// Standard Webhooks secret).
func New(db *gorm.DB, services map[string]config.Service, clk clock.Clock, log *slog.Logger, r *redact.Redactor) (*Receiver, error) {
	rc := &Receiver{db: db, hooks: map[string]hook{}, clock: clk, log: log, redact: r, lastWarn: map[string]time.Time{}}
	if models.Dialect(db) == models.SQLite {
		rc.writer = make(chan struct{}, 1)
	}
	for name, s := range services {
		if s.Webhook == nil {
			continue
		}
		vc := verifyConfig(*s.Webhook)
		if err := vc.Validate(); err != nil {
			return nil, fmt.Errorf("setting services.%s.webhook: %w", name, err)
		}
		rc.hooks[name] = hook{verify: vc, effects: effectsOf(s.Webhook.Effects, s)}
	}
	return rc, nil
}

func verifyConfig(w config.Webhook) verify.Config {
	c := verify.Config{Scheme: verify.Scheme(w.Scheme), Tolerance: w.Tolerance, Header: w.Header, Encoding: w.Encoding,
		Prefix: w.Prefix, TimestampHeader: w.TimestampHeader, IDHeader: w.IDHeader, IDPath: w.IDPath}
	for _, s := range w.Secrets {
		v, _ := config.ExpandEnv(s)
		c.Secrets = append(c.Secrets, []byte(v))
	}
	return c
}

// Handle registers (or replaces) the effect of one event type of a service.
func (r *Receiver) Handle(service, eventType string, fx Effect) {
	if h, ok := r.hooks[service]; ok {
		h.effects[eventType] = fx
	}
}

// Accepts reports whether a service takes webhooks.
func (r *Receiver) Accepts(service string) bool { _, ok := r.hooks[service]; return ok }

// Receive verifies one delivery and applies it exactly once in effect. An
// error from an effect rolls everything back (the provider will re-send); an
// event that can never apply is stored as failed and answered 2xx.
func (r *Receiver) Receive(ctx context.Context, service string, h http.Header, body []byte) (Result, error) {
	hk, ok := r.hooks[service]
	if !ok {
		return Result{}, fmt.Errorf("webhooks for %q: %w", service, models.ErrNotFound)
	}
	now := r.clock.Now()
	ev, err := verify.Verify(hk.verify, h, body, now)
	switch {
	case errors.Is(err, verify.ErrNoEventID):
		return Result{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	case errors.Is(err, verify.ErrBadConfig):
		return Result{}, err // our fault, not the sender's: a 5xx, and the provider re-sends after the fix
	case err != nil:
		r.warn(service, err)
		return Result{}, fmt.Errorf("%w: %v", ErrRejected, err)
	}
	in := Event{Service: service, ID: ev.ID, Type: ev.Type, Raw: body}
	if err := in.decode(); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	if err := in.storable(); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	payload := storableText(string(r.redact.JSON(in.Raw))) // before the transaction: it needs no lock
	var res Result
	err = r.transaction(ctx, func(tx *gorm.DB) error {
		var err error
		res, err = r.apply(ctx, tx, hk, in, payload, now)
		return err
	})
	return res, err
}

// transaction runs fn in one database transaction, taking the writer's turn
// first on SQLite.
func (r *Receiver) transaction(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if r.writer != nil {
		select {
		case r.writer <- struct{}{}:
			defer func() { <-r.writer }()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return r.db.WithContext(ctx).Transaction(fn)
}

// apply records the event and, when it is new, runs its effect; a duplicate
// only counts. Both in the caller's transaction; payload is the redacted body.
func (r *Receiver) apply(ctx context.Context, tx *gorm.DB, hk hook, in Event, payload string, now time.Time) (Result, error) {
	res := Result{EventID: in.ID}
	inserted, err := models.RecordEvent(tx, models.ProcessedEvent{Provider: in.Service, EventID: in.ID, EventType: in.Type,
		ReceivedAt: now, Outcome: models.EventApplied, Payload: payload})
	if err != nil {
		return res, err
	}
	if !inserted {
		res.Duplicate = true
		if err := models.CountDuplicate(tx, in.Service, in.ID, now); err != nil {
			return res, err
		}
		first, err := models.EventByID(tx, in.Service, in.ID)
		if err == nil {
			res.Outcome = first.Outcome
		}
		return res, err
	}
	res.Outcome, res.Note, err = r.effect(ctx, tx, hk, in, now)
	if err != nil {
		return res, err
	}
	return res, models.SetEventOutcome(tx, in.Service, in.ID, res.Outcome, r.redact.Text(res.Note))
}

// effect runs the event's effect and names the outcome.
func (r *Receiver) effect(ctx context.Context, tx *gorm.DB, hk hook, in Event, now time.Time) (string, string, error) {
	fx, ok := hk.effects[in.Type]
	if !ok {
		return models.EventIgnored, "no effect for events of type " + quoteType(in.Type), nil
	}
	note, err := fx(ctx, tx, in, now)
	var un *UnprocessableError
	switch {
	case errors.Is(err, errIgnored):
		return models.EventIgnored, note, nil
	case errors.As(err, &un):
		return models.EventFailed, un.Reason, nil
	case err != nil:
		return "", "", fmt.Errorf("apply %s %s: %w", in.Type, in.ID, err)
	}
	return models.EventApplied, note, nil
}

// Replay applies a stored event's effect again, on purpose, for by (who
// asked, as the audit log names them). Effects are idempotent (guarded
// transitions, desired state, upserts by key), so a replay can only bring
// the state to where the event says it should be. The stored payload is
// redacted: effects read only ids, keys and statuses.
//
// The event keeps its first outcome and note; the replay's own go in a row
// of the event's replay history, in the effect's transaction, so a replay
// that rolls back leaves no row and every replay that counts leaves one.
//
// An event that is not stored is models.ErrNotFound; one of a service whose
// webhook settings are gone is ErrNoWebhooks; one whose payload cannot be
// read is ErrUnreadableStored.
func (r *Receiver) Replay(ctx context.Context, service, eventID, by string) (Result, error) {
	hk, ok := r.hooks[service]
	if !ok {
		if _, err := models.EventByID(r.db.WithContext(ctx), service, eventID); err != nil {
			return Result{}, err
		}
		return Result{}, fmt.Errorf("%w: %s", ErrNoWebhooks, service)
	}
	res := Result{EventID: eventID}
	err := r.transaction(ctx, func(tx *gorm.DB) error {
		stored, err := models.EventByID(tx, service, eventID)
		if err != nil {
			return err
		}
		in := Event{Service: service, ID: eventID, Type: stored.EventType, Raw: []byte(stored.Payload)}
		if err := in.decode(); err != nil {
			return fmt.Errorf("%w (%v)", ErrUnreadableStored, err)
		}
		now := r.clock.Now()
		if res.Outcome, res.Note, err = r.effect(ctx, tx, hk, in, now); err != nil {
			return err
		}
		return models.RecordReplay(tx, models.EventReplay{Provider: service, EventID: eventID, ReplayedAt: now,
			ReplayedBy: by, Outcome: res.Outcome, Note: r.redact.Text(res.Note)})
	})
	return res, err
}

// Prune deletes processed events older than the retention, in batches.
func (r *Receiver) Prune(ctx context.Context, retention time.Duration) (int64, error) {
	var total int64
	before := r.clock.Now().Add(-retention)
	for ctx.Err() == nil {
		n, err := models.PruneEvents(r.db.WithContext(ctx), before, 5000)
		total += n
		if err != nil || n < 5000 {
			return total, err
		}
	}
	return total, ctx.Err()
}

// warn logs a rejected delivery at most once a minute per service, so a
// flood of forged requests cannot flood the log.
func (r *Receiver) warn(service string, err error) {
	r.mu.Lock()
	now := r.clock.Now()
	if now.Sub(r.lastWarn[service]) < time.Minute {
		r.mu.Unlock()
		return
	}
	r.lastWarn[service] = now
	r.mu.Unlock()
	r.log.Warn("webhook rejected", "service", service, "reason", err.Error())
}

// Event is a verified delivery, decoded.
type Event struct {
	Service, ID, Type string
	Raw               []byte
	Body              map[string]any
}

func (e *Event) decode() error {
	dec := json.NewDecoder(bytes.NewReader(e.Raw))
	dec.UseNumber()
	if err := dec.Decode(&e.Body); err != nil || e.Body == nil {
		return errors.New("the body is not a JSON object")
	}
	if e.Type == "" {
		e.Type, _ = e.Body["type"].(string)
	}
	return nil
}

func quoteType(t string) string {
	if t == "" {
		return "(none)"
	}
	return fmt.Sprintf("%q", t)
}
