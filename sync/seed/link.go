package seed

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// plan is how a link's story ends: its status and the failures at the end
// of its attempt log.
type plan struct {
	st          models.Status
	fails       int     // trailing failed attempts
	last        failure // the last of them
	repeat      bool    // every trailing failure is the last one (the outbox gave up)
	okRetry     bool    // a success right after one temporary failure
	needsLookup bool
}

func (g *gen) plan(st models.Status, k int) plan {
	p := plan{st: st}
	switch st {
	case models.StatusRetry:
		p.fails, p.last = min(k, 1+g.rng.IntN(3)), pick(g.rng, temporary)
		if g.rng.IntN(10) < 3 {
			p.last, p.needsLookup = ambiguous, true
		}
	case models.StatusFailed:
		if g.rng.IntN(100) < 25 {
			p.fails, p.last, p.repeat = min(k, 3+g.rng.IntN(3)), pick(g.rng, exhausted), true
		} else {
			p.fails, p.last = min(k, 1+g.rng.IntN(2)), pick(g.rng, permanent)
		}
	case models.StatusSuccess:
		p.okRetry = k >= 2 && g.rng.IntN(100) < 8
	}
	return p
}

// linkState is one link as its attempts are drawn.
type linkState struct {
	id           int64
	r            rec
	service      string
	p            profile
	key, idemKey string
	known        bool // the provider has the object: a create succeeded
	lastAt       time.Time
	lastErr      string
	lastCode     int
	createReq    string // request excerpts, made once
	updateReq    string
}

// link adds one link of a record to a service, with its attempts.
func (g *gen) link(b *batch, r rec, service string) {
	g.links++
	st := pickStatus(g.rng)
	k := g.attemptCount(st)
	pl := g.plan(st, k)
	l := &linkState{id: int64(g.links), r: r, service: service, p: profileOf(service),
		key: "site_" + r.typ + "_" + r.localID, idemKey: models.CreateKey(r.typ, r.localID),
		known: r.created.Before(g.o.Now.Add(-attemptSpan)), lastAt: r.created}
	if pl.needsLookup {
		// A create whose answer was lost: the provider may or may not have
		// the object, so the link has no external id and only failed creates.
		k, l.known = pl.fails, false
	}
	g.attemptsOf(b, l, pl, k)
	g.finish(b, l, pl)
}

func (l *linkState) externalID() string {
	if !l.known {
		return ""
	}
	return l.p.prefix + l.r.localID
}

// facts are what the link's failure messages name. Before its create
// succeeded, the remote id is another object's: the one a conflict names.
func (g *gen) facts(l *linkState) facts {
	f := facts{remote: l.p.remote, externalID: l.p.prefix + l.r.localID, externalKey: l.key, localID: l.r.localID}
	if !l.known {
		f.externalID = l.p.prefix + strconv.FormatInt(1+g.rng.Int64N(int64(g.o.Links)), 10)
	}
	return f
}

// attemptsOf draws k attempts: successes, then the plan's failures.
func (g *gen) attemptsOf(b *batch, l *linkState, pl plan, k int) {
	number := 0
	for j, at := range g.attemptTimes(l.r.created, k) {
		var f *failure
		switch {
		case j == k-1 && pl.fails > 0, j >= k-pl.fails && pl.repeat:
			f = &pl.last
		case j >= k-pl.fails, pl.okRetry && j == k-2:
			t := pick(g.rng, temporary)
			f = &t
		}
		number++
		g.attempt(b, l, f, number, at)
		if f == nil {
			l.known, number = true, 0
		}
	}
	if k == 0 && pl.fails == 0 && pl.last.message != nil {
		l.lastErr, l.lastCode = pl.last.message(g.facts(l)), pl.last.code
	}
}

// attempt appends one call of the link to the log; f is nil for a success.
func (g *gen) attempt(b *batch, l *linkState, f *failure, number int, at time.Time) {
	g.attempts++
	create := !l.known
	op, idem, req := l.p.remote+".update", "", l.request(g.o.Redactor, false)
	if create {
		op, idem, req = l.p.remote+".create", l.idemKey, l.request(g.o.Redactor, true)
	}
	reqID := "req_" + strconv.FormatUint(g.rng.Uint64(), 16)
	var code int
	var dur int64
	var outcome models.Outcome
	var extID, errText, resp string
	if f == nil {
		code, dur, outcome, extID = 200, 60+g.rng.Int64N(600), models.OutcomeOK, l.p.prefix+l.r.localID
		if create {
			code = 201
		}
		resp = response(code, reqID, `{"id":"`+extID+`","external_key":"`+l.key+`","status":"open","updated_at":"`+
			at.Format(time.RFC3339)+`"}`)
	} else {
		code, outcome, errText = f.code, f.outcome, f.message(g.facts(l))
		dur = 20 + g.rng.Int64N(300)
		if f.code == 0 {
			dur = 10000
		}
		if f.body != "" {
			resp = response(code, reqID, f.body)
		}
	}
	l.lastAt, l.lastErr, l.lastCode = at, errText, code
	b.attempts = append(b.attempts, int64(g.attempts), l.id, number, op, idem, code, dur, string(outcome), extID, errText,
		req, resp, workers[g.rng.IntN(len(workers))], at)
	b.nAttempts++
}

// request is the excerpt of a create or an update of the link, made once
// per link: the body is the same at every attempt. It is the connector's
// excerpt of the call (connector.Excerpt), masked by red as the
// connector's redactor masks it: the body with our key at its sorted place.
func (l *linkState) request(red *redact.Redactor, create bool) string {
	if create {
		if l.createReq == "" {
			l.createReq = l.excerpt(red, "POST "+l.p.path, l.idemKey)
		}
		return l.createReq
	}
	if l.updateReq == "" {
		l.updateReq = l.excerpt(red, "PUT "+l.p.path+"/"+l.p.prefix+l.r.localID, "")
	}
	return l.updateReq
}

// excerpt is the connector's excerpt of one call of the link, with an
// Idempotency-Key header when idemKey is not "".
func (l *linkState) excerpt(red *redact.Redactor, line, idemKey string) string {
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"syncdesk/1.0"}}
	if idemKey != "" {
		h.Set("Idempotency-Key", idemKey)
	}
	return connector.Excerpt(red, line, h, withKey(l.r.body, l.key))
}

// withKey adds our external key to a payload, as the connector does: at
// its sorted place among the payload's keys.
func withKey(body, key string) []byte {
	b, err := connector.WithKey([]byte(body), "external_key", key)
	if err != nil {
		panic(fmt.Sprintf("seed: a generated payload is not a JSON object: %v", err)) // the generator's own bug
	}
	return b
}

// finish appends the link's row in the state its story left it.
func (g *gen) finish(b *batch, l *linkState, pl plan) {
	now := g.o.Now
	updated, next := l.lastAt, l.lastAt
	var lockedUntil any
	owner, createPayload, pushed, group, lastErr := "", "", "", "", l.lastErr
	switch pl.st {
	case models.StatusRetry:
		next = now.Add(30*time.Second + time.Duration(g.rng.Int64N(int64(15*time.Minute))))
	case models.StatusFailed:
		if pl.repeat {
			lastErr = fmt.Sprintf("gave up after %d attempts; last: %s", pl.fails, l.lastErr)
		}
		group = models.ErrorGroup(l.service, l.lastCode, lastErr)
	case models.StatusNew:
		updated = later(updated, now.Add(-time.Duration(g.rng.Int64N(int64(10*time.Minute)))))
		next = updated
	case models.StatusProcessing:
		updated = later(updated, now.Add(-time.Duration(g.rng.Int64N(int64(20*time.Second)))))
		next, owner, lockedUntil = updated, workers[g.rng.IntN(len(workers))], updated.Add(time.Minute)
	}
	if !l.known && pl.st != models.StatusSuccess {
		createPayload = l.r.body // frozen as a claim freezes it: the record's payload, without our key
	}
	if l.known {
		pushed = l.r.hash
	}
	b.links = append(b.links, l.id, l.r.typ, l.r.localID, l.service, l.key, l.externalID(), string(pl.st),
		pl.fails, next, owner, lockedUntil, pl.needsLookup, l.idemKey, createPayload,
		lastErr, l.lastCode, pushed, group, l.r.created, updated)
	b.nLinks++
}
