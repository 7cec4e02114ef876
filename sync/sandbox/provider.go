// Package sandbox serves two fake but real HTTP providers: a CRM that creates
// a new deal on every POST (it ignores Idempotency-Key, which is the point)
// and can look deals up by the caller's external_key, and a payment provider
// that honours Idempotency-Key the way Stripe does but cannot look anything
// up. Both keep their objects in memory and misbehave on demand — latency,
// 5xx, 429, hangs, lost responses, validation errors — by rate or by script.
// Either can send signed webhooks about its changes (see SendWebhooks).
// syncdesk serves them in demo mode; tests run them under httptest.
package sandbox

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// spec is all that tells the two providers apart.
type spec struct {
	collection string // the path segment: "deals"
	noun       string // the id prefix and the word in errors: "deal"
	validate   func(obj map[string]any) error
	lookup     bool           // GET ?external_key=K is supported
	idempotent bool           // POST honours Idempotency-Key
	defaults   map[string]any // fields a created object gets when it lacks them
	events     hookScheme     // how its webhooks are named, shaped and signed
}

// Provider is one sandbox provider, an http.Handler over objects held in
// memory. Safe for concurrent use.
type Provider struct {
	spec spec

	mu          sync.Mutex // guards everything below
	opts        Options
	script      []Fault
	store       store
	idem        idemCache
	stats       Stats
	inflight    map[string]int // requests in flight per external_key
	maxInflight int
	hooks       hookState
}

// NewCRM returns the CRM: /deals, ids "deal_N", a non-empty "title" required,
// duplicates on every POST, lookup by external_key.
func NewCRM(opts Options) *Provider {
	return newProvider(spec{collection: "deals", noun: "deal", validate: validateDeal, lookup: true,
		events: standardScheme}, opts)
}

// NewPayments returns the payment provider: /payments, ids "pay_N", a
// positive integer "amount" and a 3-letter "currency" required,
// Idempotency-Key honoured for 24 hours, no lookup by external_key. A
// created payment gets "status": "succeeded" unless the body set a status.
func NewPayments(opts Options) *Provider {
	return newProvider(spec{collection: "payments", noun: "pay", validate: validatePayment, idempotent: true,
		defaults: map[string]any{"status": "succeeded"}, events: stripeScheme}, opts)
}

func newProvider(s spec, opts Options) *Provider {
	return &Provider{
		spec:     s,
		opts:     opts.withDefaults(Options{}),
		store:    newStore(s.noun),
		idem:     idemCache{entries: map[string]*idemEntry{}},
		stats:    Stats{ByMethod: map[string]int{}, Faults: map[FaultKind]int{}},
		inflight: map[string]int{},
	}
}

// ServeHTTP routes /{collection} and /{collection}/{id}. Mount it under a
// prefix with http.StripPrefix.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == driftPath {
		p.serveDrift(w, r)
		return
	}
	p.countRequest(r.Method)
	id, ok := p.route(r.URL.Path)
	switch down := p.Options().Down; {
	case down > 0:
		p.noteFault(Fault5xx)
		writeError(w, down, "injected fault: the provider is down")
	case !ok:
		writeError(w, http.StatusNotFound, "no such path "+r.URL.Path)
	case id == "" && r.Method == http.MethodGet:
		p.list(w, r)
	case id == "" && r.Method == http.MethodPost:
		p.create(w, r)
	case id != "" && r.Method == http.MethodGet:
		p.get(w, r, id)
	case id != "" && r.Method == http.MethodPut:
		p.replace(w, r, id)
	case id != "" && r.Method == http.MethodDelete:
		p.delete(w, r, id)
	default:
		allow := map[bool]string{true: "GET, POST", false: "GET, PUT, DELETE"}[id == ""]
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
	}
}

// route splits a path into the object id ("" for the collection itself).
func (p *Provider) route(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/"+p.spec.collection)
	switch {
	case !ok:
		return "", false
	case rest == "":
		return "", true
	}
	id, ok := strings.CutPrefix(rest, "/")
	return id, ok && id != "" && !strings.Contains(id, "/")
}

// create is POST /{collection}: a new object, unless an Idempotency-Key
// says this request was already answered.
func (p *Provider) create(w http.ResponseWriter, r *http.Request) {
	obj, ok := readObject(w, r)
	if !ok {
		return
	}
	defer p.track(externalKey(obj))()
	c, ok := p.claimKey(w, r, obj)
	if !ok {
		return
	}
	defer p.releaseClaim(c)
	f := p.nextFault(true)
	if !p.prelude(w, r, f) {
		return
	}
	if c.replay != nil {
		p.note(func(s *Stats) { s.Replays++ })
		w.Header().Set("Idempotent-Replayed", "true")
		p.respond(w, f, c.replay.status, c.replay.body)
		return
	}
	if err := p.spec.validate(obj); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	p.respond(w, f, http.StatusCreated, p.commitCreate(obj, c))
}

// commitCreate stores obj and, in the same critical section, the answer an
// idempotent retry will replay, so no retry can see one without the other.
func (p *Provider) commitCreate(obj map[string]any, c claim) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	stored := p.store.add(fillDefaults(obj, p.spec.defaults))
	body := mustJSON(stored)
	p.stats.Creates++
	if c.held != nil {
		p.idem.finish(c.held, http.StatusCreated, body)
	}
	p.emitLocked(p.spec.events.created, stored)
	return body
}

// replace is PUT /{collection}/{id}: the body is the object's desired state.
func (p *Provider) replace(w http.ResponseWriter, r *http.Request, id string) {
	obj, ok := readObject(w, r)
	if !ok {
		return
	}
	defer p.track(p.keyOf(id, obj))()
	f := p.nextFault(true)
	if !p.prelude(w, r, f) {
		return
	}
	if err := p.spec.validate(obj); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	p.mu.Lock()
	stored, found := p.store.replace(id, obj)
	var body []byte
	if found {
		p.stats.Updates++
		body = mustJSON(stored)
		p.emitLocked(p.spec.events.updated, stored)
	}
	p.mu.Unlock()
	if !found {
		p.notFound(w, id)
		return
	}
	p.respond(w, f, http.StatusOK, body)
}

// list is GET /{collection}: a lookup by ?external_key= or a page by
// ?cursor=&limit= (default 100, at most 1000; more is cut to 1000).
func (p *Provider) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("external_key") && !p.spec.lookup {
		writeError(w, http.StatusBadRequest, "lookup by external_key is not supported")
		return
	}
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	f := p.nextFault(false)
	if !p.prelude(w, r, f) {
		return
	}
	var page listPage
	p.mu.Lock()
	if q.Has("external_key") {
		page.Items = p.store.withKey(q.Get("external_key"))
	} else {
		page.Items, page.NextCursor, err = p.store.page(q.Get("cursor"), limit)
	}
	body := mustJSON(page)
	p.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p.respond(w, f, http.StatusOK, body)
}

// listPage is the answer of GET /{collection}.
type listPage struct {
	Items      []map[string]any `json:"items"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

// get is GET /{collection}/{id}.
func (p *Provider) get(w http.ResponseWriter, r *http.Request, id string) {
	f := p.nextFault(false)
	if !p.prelude(w, r, f) {
		return
	}
	p.mu.Lock()
	obj, found := p.store.get(id)
	var body []byte
	if found {
		body = mustJSON(obj)
	}
	p.mu.Unlock()
	if !found {
		p.notFound(w, id)
		return
	}
	p.respond(w, f, http.StatusOK, body)
}

// delete is DELETE /{collection}/{id}: the deletes of deleted records, and
// drift in demos and tests. It meets faults like any write, a lost answer
// after the object went included.
func (p *Provider) delete(w http.ResponseWriter, r *http.Request, id string) {
	f := p.nextFault(true)
	if !p.prelude(w, r, f) {
		return
	}
	if !p.remove(id) {
		p.notFound(w, id)
		return
	}
	p.respond(w, f, http.StatusNoContent, nil)
}

func (p *Provider) notFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, fmt.Sprintf("no %s %s", p.spec.noun, id))
}

func validateDeal(obj map[string]any) error {
	if title, _ := obj["title"].(string); strings.TrimSpace(title) == "" {
		return errors.New("title is required")
	}
	return nil
}

func validatePayment(obj map[string]any) error {
	// JSON numbers arrive as float64: integral and within float64's exact
	// integer range, or it is not an amount in minor units.
	amount, ok := obj["amount"].(float64)
	if !ok || amount <= 0 || amount != float64(int64(amount)) || amount > 1<<53 {
		return errors.New("amount must be a positive integer (minor units)")
	}
	if cur, _ := obj["currency"].(string); !isLetters(cur, 3) {
		return errors.New("currency must be a 3-letter code")
	}
	return nil
}

func isLetters(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}
