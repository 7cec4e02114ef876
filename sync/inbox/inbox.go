// Package inbox takes providers' webhooks exactly once in effect: it verifies
// each delivery's signature, records (provider, event_id) and applies the
// event's effect in one transaction, answers duplicates without effect, and
// lets an operator replay an event deliberately.
package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox/verify"
	"github.com/syncdesk/syncdesk/sync/mapping"
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
	webhook config.Webhook // resolved: the table in place, the defaults filled in
	// eventID and eventType find each event's id and type in a list of
	// events; a delivery of one event is known by the id its scheme gives.
	eventID, eventType *mapping.Expr
	effects            map[string]Effect // keyed as the table: event types and patterns
	handled            map[string]Effect // set by Handle, by exact type; before the table
	entries            []string          // the table's keys in the order they are chosen (config.Webhook.Entries)
	// idPaths are every path the table reads an id or a key with: what
	// they find is kept readable in the stored copy (see keptIDs).
	idPaths []*mapping.Expr
}

// Receiver accepts webhooks for the configured services.
type Receiver struct {
	db     *gorm.DB
	hooks  map[string]*hook
	clock  clock.Clock
	log    *slog.Logger
	redact *redact.Redactor

	mu       sync.Mutex
	lastWarn map[string]time.Time

	refused refusals // refused deliveries counted, not yet written (refusals.go)

	// writer, on SQLite only, lets one webhook transaction at a time ask for
	// the database's single write lock. Writers that queue here are handed
	// the turn the moment it is free; writers that queue in SQLite's busy
	// handler instead sleep in growing steps (1, 2, 5, 10 … 100 ms) while the
	// lock sits free, which cost a third of the throughput under concurrent
	// deliveries. models' write gate does the same for every transaction of
	// the process; this turn also lets the deliveries that arrive while a
	// group waits for it join the next group (groupcommit.go).
	writer chan struct{}
	// group, on SQLite only, runs concurrent deliveries in one transaction
	// and one commit (groupcommit.go); nil on Postgres.
	group *committer

	dups duplicates // re-sends answered from a read, counted, not yet written (duplicates.go)
}

// New builds a receiver for every service that has a webhook configured,
// refusing a configuration the verifier cannot use (e.g. a malformed
// Standard Webhooks secret) or an effect table that does not compile.
func New(db *gorm.DB, services map[string]config.Service, clk clock.Clock, log *slog.Logger, r *redact.Redactor) (*Receiver, error) {
	rc := &Receiver{db: db, hooks: map[string]*hook{}, clock: clk, log: log, redact: r, lastWarn: map[string]time.Time{}}
	if models.Dialect(db) == models.SQLite {
		rc.writer = make(chan struct{}, 1)
		rc.group = newCommitter(db, rc.writer)
	}
	for name, s := range services {
		if s.Webhook == nil {
			continue
		}
		h, err := newHook(s)
		if err != nil {
			return nil, fmt.Errorf("setting services.%s.webhook: %w", name, err)
		}
		rc.hooks[name] = h
	}
	return rc, nil
}

func newHook(s config.Service) (*hook, error) {
	w, err := s.Webhook.Resolved()
	if err != nil {
		return nil, fmt.Errorf("effects: %w", err)
	}
	h := &hook{verify: verifyConfig(w), webhook: w, handled: map[string]Effect{}, entries: w.Entries()}
	if err := h.verify.Validate(); err != nil {
		return nil, err
	}
	if w.EventID != "" {
		if h.eventID, err = mapping.CompileExpr("event_id", w.EventID); err != nil {
			return nil, err
		}
	}
	if h.eventType, err = mapping.CompileExpr("event_type", w.EventType); err != nil {
		return nil, err
	}
	if h.idPaths, err = idPaths(w); err != nil {
		return nil, err
	}
	h.effects, err = compileEffects(w, s)
	return h, err
}

// idPaths compiles, once each, the paths of w that find ids and keys.
func idPaths(w config.Webhook) ([]*mapping.Expr, error) {
	srcs := []string{w.Paths.ID, w.Paths.Key}
	for _, e := range w.Effects.Table {
		srcs = append(srcs, e.ID, e.Key)
	}
	slices.Sort(srcs)
	var out []*mapping.Expr
	for _, src := range slices.Compact(srcs) {
		if src == "" {
			continue
		}
		e, err := mapping.CompileExpr(src, src)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// keptIDs are the ids and keys an event's paths find. The redactor masks
// long runs of letters and digits as likely secrets, and a provider's ids
// are such runs (Stripe's pi_3MtwBwLkdIwHu7ix28a3tqPa): masked in the
// stored copy, a replay would look the link up by "[redacted]".
func (hk *hook) keptIDs(ev Event) []string {
	ids := []string{ev.ID}
	for _, e := range hk.idPaths {
		if v, ok, err := e.Eval(ev.Doc); err == nil && ok {
			switch v.(type) {
			case map[string]any, []any, bool:
			default:
				ids = append(ids, mapping.Text(v))
			}
		}
	}
	return ids
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

// Handle registers (or replaces) the effect of one event type of a service,
// before what its table says.
func (r *Receiver) Handle(service, eventType string, fx Effect) {
	if h, ok := r.hooks[service]; ok {
		h.handled[eventType] = fx
	}
}

// Accepts reports whether a service takes webhooks.
func (r *Receiver) Accepts(service string) bool { _, ok := r.hooks[service]; return ok }

// Delivery is one request a provider made to /hooks/{service}.
type Delivery struct {
	// Method and URL are what the provider called, for schemes that sign
	// them (HubSpot): the URL as the provider saw it, behind a proxy the
	// public one.
	Method, URL string
	Header      http.Header
	Body        []byte
}

// Answer tells the provider what happened to its delivery: one result per
// event it carried.
type Answer struct {
	Events []Result
	batch  bool
}

// MarshalJSON answers a single event with its result, and a list of events
// with {"events": [...]}.
func (a Answer) MarshalJSON() ([]byte, error) {
	if !a.batch && len(a.Events) == 1 {
		return json.Marshal(a.Events[0])
	}
	return json.Marshal(struct {
		Events []Result `json:"events"`
	}{a.Events})
}

// Receive verifies one delivery and applies each event it carries exactly
// once in effect. Events already stored are answered from one read, with
// their first outcome, and only counted (duplicates.go); the others are
// applied in one transaction (on SQLite shared with concurrent deliveries,
// each in its own savepoint: groupcommit.go): an error from an effect rolls
// back the delivery's events (the provider will re-send the delivery, and
// the events already applied are then duplicates); an event that can never
// apply is stored as failed and answered 2xx.
func (r *Receiver) Receive(ctx context.Context, service string, d Delivery) (Answer, error) {
	hk, ok := r.hooks[service]
	if !ok {
		return Answer{}, fmt.Errorf("webhooks for %q: %w", service, models.ErrNotFound)
	}
	now := r.clock.Now()
	ev, err := verify.VerifyRequest(hk.verify, verify.Request{Method: d.Method, URL: d.URL}, d.Header, d.Body, now)
	switch {
	case errors.Is(err, verify.ErrNoEventID):
		return Answer{}, r.refuse(ctx, service, ErrBadEvent, err)
	case errors.Is(err, verify.ErrBadConfig):
		return Answer{}, err // our fault, not the sender's: a 5xx, and the provider re-sends after the fix
	case err != nil:
		r.warn(service, err)
		return Answer{}, r.refuse(ctx, service, ErrRejected, err)
	}
	events, batch, err := hk.split(service, ev, d.Body)
	if err != nil {
		return Answer{}, r.refuse(ctx, service, ErrBadEvent, err)
	}
	payloads := make([]string, len(events)) // before the transaction: they need no lock
	redactors := make([]*redact.Redactor, len(events))
	for i, in := range events {
		redactors[i] = r.redact.Keeping(hk.keptIDs(in)...)
		payloads[i] = storableText(string(redactors[i].JSON(in.Raw)))
	}
	return r.receive(ctx, hk, events, batch, payloads, redactors, now)
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
		row, err := models.EventByID(tx, service, eventID)
		if err != nil {
			return err
		}
		in, err := stored(service, eventID, row.EventType, row.Payload)
		if err != nil {
			return fmt.Errorf("%w (%v)", ErrUnreadableStored, err)
		}
		now := r.clock.Now()
		if res.Outcome, res.Note, err = r.effect(ctx, tx, hk, in, now); err != nil {
			return err
		}
		return models.RecordReplay(tx, models.EventReplay{Provider: service, EventID: eventID, ReplayedAt: now,
			ReplayedBy: by, Outcome: res.Outcome, Note: r.redact.Keeping(hk.keptIDs(in)...).Text(res.Note)})
	})
	return res, err
}

// Prune deletes processed events older than the retention, in batches,
// and the counts of refused deliveries as old.
func (r *Receiver) Prune(ctx context.Context, retention time.Duration) (int64, error) {
	var total int64
	before := r.clock.Now().Add(-retention)
	if _, err := models.PruneRefusals(r.db.WithContext(ctx), before); err != nil {
		return 0, err
	}
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

func quoteType(t string) string {
	if t == "" {
		return "(none)"
	}
	return fmt.Sprintf("%q", t)
}
