package sandbox

import (
	"maps"
)

// Stats counts what a provider has seen since it was made.
type Stats struct {
	Total    int            // every request, whatever became of it
	ByMethod map[string]int // requests per HTTP method
	Creates  int            // objects created by POST (replays and Insert not counted)
	Updates  int            // objects replaced by PUT
	Replays  int            // POSTs answered from the idempotency store
	Faults   map[FaultKind]int
}

// Requests returns a copy of the provider's counters.
func (p *Provider) Requests() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.ByMethod = maps.Clone(s.ByMethod)
	s.Faults = maps.Clone(s.Faults)
	return s
}

func (p *Provider) countRequest(method string) {
	p.note(func(s *Stats) { s.Total++; s.ByMethod[method]++ })
}

func (p *Provider) noteFault(k FaultKind) {
	p.note(func(s *Stats) { s.Faults[k]++ })
}

func (p *Provider) note(change func(*Stats)) {
	p.mu.Lock()
	change(&p.stats)
	p.mu.Unlock()
}

// track counts a request in flight for key until the returned func is
// called; requests without a key are not tracked.
func (p *Provider) track(key string) (done func()) {
	if key == "" {
		return func() {}
	}
	p.mu.Lock()
	p.inflight[key]++
	p.maxInflight = max(p.maxInflight, p.inflight[key])
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		if p.inflight[key]--; p.inflight[key] == 0 {
			delete(p.inflight, key)
		}
		p.mu.Unlock()
	}
}

// keyOf is the external_key a PUT to id concerns: the stored object's, or
// the body's when the object has none (or is missing).
func (p *Provider) keyOf(id string, body map[string]any) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if obj, ok := p.store.get(id); ok && externalKey(obj) != "" {
		return externalKey(obj)
	}
	return externalKey(body)
}

// MaxConcurrentPerKey is the most POST/PUT requests ever seen in flight at
// once for a single external_key: a sync engine that serialises per record
// keeps it at 1.
func (p *Provider) MaxConcurrentPerKey() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxInflight
}

// CountByKey is how many objects carry external_key key.
func (p *Provider) CountByKey(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.store.withKey(key))
}

// Objects returns a deep copy of every object, in id order.
func (p *Provider) Objects() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.store.all()
}

// Delete removes object id, as if someone deleted it on the provider's side;
// false if there was none.
func (p *Provider) Delete(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.store.remove(id)
}

// SetField changes one field of object id behind the caller's back; false
// if there is no such object or field is "id". v must be JSON-encodable
// (it panics otherwise) and is stored as it would arrive over HTTP.
func (p *Provider) SetField(id, field string, v any) bool {
	norm := clone(map[string]any{"v": v})["v"]
	p.mu.Lock()
	defer p.mu.Unlock()
	obj, ok := p.store.get(id)
	if !ok || field == "id" {
		return false
	}
	obj[field] = norm
	return true
}

// Insert creates an object directly, with no request, validation or fault
// (an unlinked or duplicate object for reconciliation), and returns its id.
// Any "id" in obj is replaced; obj must be JSON-encodable (it panics otherwise).
func (p *Provider) Insert(obj map[string]any) (id string) {
	norm := clone(obj)
	if norm == nil {
		norm = map[string]any{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.store.add(norm)["id"].(string)
}

// Options returns the provider's current options.
func (p *Provider) Options() Options {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opts
}

// SetOptions changes a running provider's latency and faults from the next
// request on. A nil Now or Rand keeps the current one, so that
// `o := p.Options(); o.Rate5xx = 0.2; p.SetOptions(o)` is the way to turn one knob.
func (p *Provider) SetOptions(opts Options) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts = opts.withDefaults(p.opts)
}
