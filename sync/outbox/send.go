package outbox

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// job is one claimed link with what it needs to be sent.
type job struct {
	link    models.Link
	payload string // the record's current canonical payload
	hash    string
	probe   bool // sent to test a paused service's provider
	// requested: a person asked for this sync (Sync now), and the send,
	// once made, answers them.
	requested bool
}

// send runs one link's operation — update, look up then create, or delete
// — and decides its outcome. It never panics: a connector panic fails the attempt.
func (e *Engine) send(ctx context.Context, j job) (out models.LinkOutcome) {
	svc, ok := e.services[j.link.ExternalService]
	out = models.LinkOutcome{Link: j.link, Attempts: j.link.Attempts, NeedsLookup: j.link.NeedsLookup, DeleteUnknown: j.link.DeleteUnknown,
		Requested: j.requested}
	if _, routed := svc.Config.Objects[j.link.LocalType]; !ok || !routed {
		out.Status, out.LastError = models.StatusFailed, fmt.Sprintf("%s is no longer routed to %s in the configuration", j.link.LocalType, j.link.ExternalService)
		return out
	}
	out.SentFor = j.hash
	if j.link.LeaseDeletes {
		out.SentFor = models.DeletedHash
	}
	s := sender{e: e, svc: svc, j: j, out: &out, redact: e.opts.Redactor.ForPayload([]byte(j.payload), []byte(j.link.CreatePayload))}
	s.run(queuedBy(ctx, j.link))
	return out
}

// sender carries one link's send through its calls.
type sender struct {
	e   *Engine
	svc Service
	j   job
	out *models.LinkOutcome
	// redact knows the record's secrets (its payload's sensitive values, as
	// sent now or at the first create), for what its attempts store.
	redact *redact.Redactor
	// stopped: the last call was cut short by our own stop, which says
	// nothing about the provider and must not use up the link's attempts.
	stopped bool
	// uncharged: the last call failed while the service's breaker was
	// open, or opened it: the provider is down, not the link wrong, and
	// the link keeps its attempts for when the service resumes.
	uncharged bool
	// unsent: the last call never left, its wait for the service's pace
	// cut short by our stop (connector.Call.Unsent): no attempt, and
	// nothing for the breaker, which would take our stop for the
	// provider's failures and pause the service.
	unsent bool
	// spent: the link's idempotency key got a 5xx the provider replays
	// (spentKey): the create is looked up, and sent under the next key.
	spent bool
}

func (s *sender) run(ctx context.Context) {
	l := s.j.link
	conn := s.svc.Conn
	var spentAt time.Time
	if s.spent, spentAt = s.spentKey(ctx); s.spent && s.waitForSearch(spentAt) {
		return
	}
	if l.LeaseDeletes { // the record was deleted when claimed: the object is to go
		s.remove(ctx)
		return
	}
	if conn.CanUpsert(l.LocalType) {
		// One idempotent call by our key, created or updated alike: a lost
		// answer is harmless, and no lookup is needed.
		call := s.call(ctx, func(ctx context.Context) connector.Call { return conn.Upsert(ctx, s.record(s.j.payload)) })
		if len(call.Found) > 1 {
			s.needsPerson(call.Found)
			return
		}
		s.settle(call, s.j.hash)
		return
	}
	if l.ExternalID != "" {
		call := s.call(ctx, func(ctx context.Context) connector.Call { return conn.Update(ctx, s.record(s.j.payload)) })
		// Missing after a delete of ours whose outcome is unknown: most
		// likely that delete took effect. Otherwise somebody else deleted
		// the object, and the 404 fails the link for a person to decide.
		if call.HTTPCode == http.StatusNotFound && l.DeleteUnknown && conn.CanLookup(l.LocalType) {
			s.recreate(ctx)
			return
		}
		s.settle(call, s.j.hash)
		return
	}
	if s.mustLookUp() {
		call, id, ok := s.lookUp(ctx)
		if !ok {
			return
		}
		if id != "" {
			// The lost create did reach the provider: adopt its object, as if
			// the create had answered. It holds the frozen create body.
			s.settle(call, models.HashPayload(s.createBody()))
			return
		}
		if s.retryBudgetSpent() {
			return
		}
	}
	body, key := s.createBody(), l.IdempotencyKey
	switch {
	case s.spent:
		// The lookup found nothing: the failed create made nothing, and the
		// same body goes under a key the provider has no answer saved for.
		key = nextKey(l.IdempotencyKey)
		s.out.NextKey = key
	case s.frozenBodyOutdated():
		body, key = s.j.payload, nextKey(l.IdempotencyKey)
		s.out.CreateBody, s.out.NextKey = body, key
	}
	call := s.call(ctx, func(ctx context.Context) connector.Call {
		return conn.Create(ctx, s.record(body), key)
	})
	s.settle(call, models.HashPayload(body))
}

// frozenBodyOutdated says whether a create sends the record as it now is
// rather than the body frozen at its first attempt. The frozen body is what
// a create that may have reached the provider carried, so that its retry,
// or the object a lookup adopts, is that create's. While no attempt may
// have — no lookup pending, and the provider answered the last one (a
// refusal; not a connector that crashed, which may have sent it) — it binds
// nothing, and a record written since, its data fixed after the provider
// refused it, say, is what the provider must get. It goes under the next
// idempotency key: a provider that saved its refusal under the old one
// would answer the new body with an error, not a create.
func (s *sender) frozenBodyOutdated() bool {
	l := s.j.link
	return !l.NeedsLookup && l.LastHTTPCode != 0 && l.CreatePayload != "" && s.j.payload != "" && l.CreatePayload != s.j.payload
}

// lookUp asks the provider for the object of the link's key, and returns
// the call, the object's id ("" when there is none) and whether to go on:
// a failed call is settled, and more than one object handed to a person,
// here.
func (s *sender) lookUp(ctx context.Context) (call connector.Call, id string, ok bool) {
	l, conn := s.j.link, s.svc.Conn
	call = s.call(ctx, func(ctx context.Context) connector.Call { return conn.Lookup(ctx, l.LocalType, l.ExternalKey) })
	switch {
	case call.Class != connector.OK:
		s.settle(call, "")
		return call, "", false
	case len(call.Found) > 1:
		s.needsPerson(call.Found)
		return call, "", false
	case len(call.Found) == 1:
		return call, call.Found[0], true
	}
	return call, "", true
}

// record is what the connector needs of the link to send payload.
func (s *sender) record(payload string) connector.Record {
	l := s.j.link
	return connector.Record{LocalType: l.LocalType, LocalID: l.LocalID, Key: l.ExternalKey, ExternalID: l.ExternalID,
		Payload: []byte(payload)}
}

// mustLookUp says whether a create must first look our key up: after an
// attempt that may have reached the provider (or always, when the service
// says so), unless the idempotency key still replays its first answer and
// that answer was no 5xx (see spentKey). A provider that
// replays a key's first answer for a window (Stripe: 24 h) makes the
// re-sent create safe on its own, and its search may not yet show an
// object made a moment ago; past the window the key is forgotten, and only
// the lookup stands between a lost create and a second object. The link's
// creation bounds the key's first use from below, so the test errs towards
// looking up.
func (s *sender) mustLookUp() bool {
	l, cfg := s.j.link, s.svc.Config
	if !(l.NeedsLookup || cfg.LookupBeforeCreate) || !s.svc.Conn.CanLookup(l.LocalType) {
		return false
	}
	return !s.keyReplays()
}

// keyReplays says whether the provider still answers a create sent again
// with the link's idempotency key with its first answer (see mustLookUp).
func (s *sender) keyReplays() bool {
	l, cfg := s.j.link, s.svc.Config
	return cfg.IdempotencyHeader != "" && cfg.IdempotencyWindow > 0 && l.IdempotencyKey != "" && !s.spent &&
		s.e.clock.Now().Before(l.CreatedAt.Add(cfg.IdempotencyWindow))
}

// needsPerson fails the link: several objects carry its key, and which one
// to keep is not the engine's to decide.
func (s *sender) needsPerson(ids []string) {
	l := s.j.link
	s.out.Status = models.StatusFailed
	s.out.LastError = fmt.Sprintf("%d objects in %s carry the key %s (ids %s): a person must decide which one to keep",
		len(ids), l.ExternalService, l.ExternalKey, strings.Join(ids, ", "))
}

// createBody is the body frozen at the first create attempt, or the current
// payload when none was frozen (the record was missing at claim time).
func (s *sender) createBody() string {
	if s.j.link.CreatePayload != "" {
		return s.j.link.CreatePayload
	}
	return s.j.payload
}

// retryBudgetSpent stops a lookup-then-create from exceeding max attempts.
// The lookup found nothing, so the reason the link fails is the failure
// that made it look: that is what the person reading it needs.
func (s *sender) retryBudgetSpent() bool {
	if s.out.Attempts < s.svc.Config.Retry.MaxAttempts {
		return false
	}
	s.out.Status = models.StatusFailed
	s.out.LastError = fmt.Sprintf("gave up after %d attempts (the last one a lookup that found nothing)", s.out.Attempts)
	if prev := s.j.link.LastError; prev != "" {
		s.out.LastError += "; the failure before it: " + prev
		s.out.LastHTTP = s.j.link.LastHTTPCode
	}
	return true
}

// call runs one connector call, turning a panic into a permanent failure of
// that attempt, and logs it as an attempt row.
func (s *sender) call(ctx context.Context, f func(context.Context) connector.Call) (c connector.Call) {
	start := s.e.clock.Now()
	callCtx, span := s.startSpan(ctx)
	defer func() { s.endSpan(span, c) }()
	func() {
		defer func() {
			if r := recover(); r != nil {
				// A bug, not the provider: retried like a temporary failure, so that
				// a fix deployed meanwhile gets its chance, and bounded by max attempts.
				// The panic's value may quote a request, headers and all: redacted
				// like every excerpt, since it is stored and shown.
				c = connector.Call{Operation: "connector", Class: connector.Temporary,
					Error: s.redact.Excerpt(s.redact.Text(fmt.Sprintf("the connector crashed: %v", r)), 300)}
				s.e.log.Error("connector panic", "service", s.svc.Name, "link", s.j.link.ID, "panic", s.redact.Text(fmt.Sprint(r)))
			}
		}()
		c = f(callCtx)
	}()
	// The connector masks what it can see of the record (a create's or an
	// update's body); a lookup carries none of it, yet its answer may
	// quote what the provider stored.
	s.redactKnown(&c)
	s.stopped = ctx.Err() != nil
	if s.unsent = c.Unsent; s.unsent {
		return c // not a call: no attempt, and nothing for the breaker
	}
	s.breaker(ctx, c)
	s.logAttempt(c, start)
	if chk := c.Checked; chk != nil {
		// The lookup a conflict made to tell our object from somebody
		// else's: a call to the provider like any, and in the log after
		// the create whose answer it read.
		s.redactKnown(chk)
		s.logAttempt(*chk, start.Add(c.Duration))
	}
	return c
}

// redactKnown masks, in what c stored of the exchange, the record's fields
// and secrets the redactor knows.
func (s *sender) redactKnown(c *connector.Call) {
	c.Error, c.Request, c.Response = s.redact.Known(c.Error), s.redact.Known(c.Request), s.redact.Known(c.Response)
}

// logAttempt counts c as an attempt of the link and keeps its row.
func (s *sender) logAttempt(c connector.Call, start time.Time) {
	s.out.Attempts++
	s.out.Calls = append(s.out.Calls, models.Attempt{LinkID: s.j.link.ID, Number: s.out.Attempts, Operation: c.Operation,
		IdempotencyKey: c.IdempotencyKey, HTTPCode: c.HTTPCode, DurationMS: c.Duration.Milliseconds(), Outcome: outcomeOf(c),
		ExternalID: c.ExternalID, Error: c.Error, RequestExcerpt: c.Request, ResponseExcerpt: c.Response,
		Worker: s.e.opts.WorkerID, CreatedAt: start})
}

// breaker tells the service's breaker what the call got. A probe's call
// the provider answers resumes the service; the link's later calls count
// as any other's.
func (s *sender) breaker(ctx context.Context, c connector.Call) {
	b := s.e.breaker
	if b == nil {
		return
	}
	if s.j.probe {
		if b.ProbeDone(ctx, s.svc.Name, c) {
			s.j.probe = false
		}
		s.uncharged = c.Class == connector.Temporary && s.j.probe
		return
	}
	s.uncharged = c.Class == connector.Temporary && b.Record(ctx, s.svc.Name, c)
}

// settle turns the last call into the link's outcome.
func (s *sender) settle(c connector.Call, pushed string) {
	now := s.e.clock.Now()
	s.out.LastHTTP, s.out.LastError = c.HTTPCode, c.Error
	if c.Unsent {
		s.e.log.Info("not sent, handed back", "service", s.svc.Name, "link", s.j.link.ID, "operation", c.Operation, "why", c.Error)
	} else if c.Class != connector.OK {
		s.e.log.Warn("send failed", "service", s.svc.Name, "link", s.j.link.ID, "key", s.j.link.ExternalKey,
			"operation", c.Operation, "class", string(c.Class), "ambiguous", c.Ambiguous, "http", c.HTTPCode, "error", c.Error)
	}
	switch {
	case c.Class == connector.OK:
		s.out.Status, s.out.ExternalID, s.out.PushedHash = models.StatusSuccess, c.ExternalID, pushed
		s.out.NeedsLookup, s.out.DeleteUnknown, s.out.LastError, s.out.NextAttempt = false, false, "", now
	case s.unsent:
		// Handed back as claimed, for the next engine to send at once.
		s.out.LastHTTP, s.out.LastError = s.j.link.LastHTTPCode, s.j.link.LastError
		s.out.Status, s.out.NextAttempt = models.StatusRetry, now
		if s.out.Attempts == 0 {
			s.out.Status = models.StatusNew
		}
		s.out.Requested = false // a Sync now waits for the send that goes
	case c.Class == connector.Permanent:
		s.out.Status, s.out.NextAttempt = models.StatusFailed, now
		if s.out.LastError == "" {
			s.out.LastError = fmt.Sprintf("HTTP %d", c.HTTPCode)
		}
	case s.stopped:
		// Back to the queue as soon as an engine runs again, looked up first
		// if the request may have arrived. The attempt is logged and counted,
		// but never the one that exhausts the link's attempts: the next
		// engine gets at least one more.
		s.out.NeedsLookup = s.out.NeedsLookup || c.Ambiguous
		s.out.Status, s.out.NextAttempt = models.StatusRetry, now
		s.out.Requested = false // a Sync now waits for the send that is not cut short
	case c.Quota:
		// The provider's allowance for a period is spent (a daily limit),
		// for every link alike: not this link's failure. It keeps its
		// attempts and goes again when the answer's hold is over, however
		// long the allowance takes to come back.
		s.out.Attempts = s.j.link.Attempts
		s.out.Status, s.out.NextAttempt = models.StatusRetry, now.Add(c.RetryAfter)
	case s.uncharged:
		// The pause holds the link back, and when the service resumes it
		// goes out with its attempts intact. The backoff of a first retry
		// keeps it from going round at once while this instance does not
		// see the pause yet.
		s.out.NeedsLookup = s.out.NeedsLookup || c.Ambiguous
		s.out.Attempts = s.j.link.Attempts
		delay := Backoff(1, s.svc.Config.Retry.Base, s.svc.Config.Retry.Max, s.e.jitter)
		s.out.Status, s.out.NextAttempt = models.StatusRetry, now.Add(delay)
	default:
		s.out.NeedsLookup = s.out.NeedsLookup || c.Ambiguous
		if s.out.Attempts >= s.svc.Config.Retry.MaxAttempts {
			s.out.Status, s.out.NextAttempt = models.StatusFailed, now
			s.out.LastError = fmt.Sprintf("gave up after %d attempts; last: %s", s.out.Attempts, c.Error)
			return
		}
		delay := c.RetryAfter
		if delay == 0 {
			delay = Backoff(s.out.Attempts, s.svc.Config.Retry.Base, s.svc.Config.Retry.Max, s.e.jitter)
		}
		s.out.Status, s.out.NextAttempt = models.StatusRetry, now.Add(delay)
	}
}

// outcomeOf is the attempt log's word for what a call came to.
func outcomeOf(c connector.Call) models.Outcome {
	if c.Class != connector.OK && c.Ambiguous {
		return models.OutcomeAmbiguous
	}
	return models.Outcome(c.Class)
}
