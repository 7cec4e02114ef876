package sandbox

import (
	"crypto/sha256"
	"net/http"
	"time"
)

// IdempotencyWindow is how long a finished request's answer is kept for replay.
const IdempotencyWindow = 24 * time.Hour

// idemEntry is what the provider remembers of one Idempotency-Key. Once done
// is set its fields never change again, so a finished entry may be read
// without the lock.
type idemEntry struct {
	hash   [sha256.Size]byte // of the canonical request body
	at     time.Time         // when the first request with the key arrived
	done   bool
	status int
	body   []byte
}

// idemVerdict is what a request with a key may do.
type idemVerdict int

const (
	idemFresh    idemVerdict = iota // first use (or the old one expired): process it
	idemReplay                      // answer with the finished entry
	idemBusy                        // the first request is still running: 409
	idemMismatch                    // the key came with another body: 422
)

// idemCache holds the keys of one provider; the provider's mutex guards it.
type idemCache struct {
	entries map[string]*idemEntry
	swept   time.Time
}

// begin decides what a request carrying key and a body hashing to hash may
// do, reserving the key when it is fresh. Following Stripe, a request that
// is still running blocks others outright (409), whatever their body.
func (c *idemCache) begin(key string, hash [sha256.Size]byte, now time.Time) (idemVerdict, *idemEntry) {
	c.sweep(now)
	e := c.entries[key]
	switch {
	case e != nil && !e.done:
		return idemBusy, e
	case e != nil && now.Sub(e.at) < IdempotencyWindow && e.hash != hash:
		return idemMismatch, e
	case e != nil && now.Sub(e.at) < IdempotencyWindow:
		return idemReplay, e
	}
	e = &idemEntry{hash: hash, at: now}
	c.entries[key] = e
	return idemFresh, e
}

// finish records the answer that later requests with the key replay.
func (c *idemCache) finish(e *idemEntry, status int, body []byte) {
	e.done, e.status, e.body = true, status, body
}

// release forgets a reservation whose request ended without committing
// (a fault, a validation error, a client that left), so a retry may run.
func (c *idemCache) release(key string, e *idemEntry) {
	if c.entries[key] == e && !e.done {
		delete(c.entries, key)
	}
}

// sweep drops expired answers, at most once an hour of the provider's clock,
// so a long demo does not keep every key forever.
func (c *idemCache) sweep(now time.Time) {
	if now.Sub(c.swept) < time.Hour {
		return
	}
	c.swept = now
	for k, e := range c.entries {
		if e.done && now.Sub(e.at) >= IdempotencyWindow {
			delete(c.entries, k)
		}
	}
}

// claim is one request's hold on its Idempotency-Key.
type claim struct {
	key    string
	held   *idemEntry // reserved by this request; nil without a key
	replay *idemEntry // a finished earlier request to answer with
}

// claimKey applies the Idempotency-Key of a POST. Bodies are compared after
// decoding and re-encoding (keys sorted, whitespace dropped, 1000 == 1e3), so
// a client that re-serialises the same request is not refused. It answers
// 409 or 422 itself and then reports false.
func (p *Provider) claimKey(w http.ResponseWriter, r *http.Request, obj map[string]any) (claim, bool) {
	key := r.Header.Get("Idempotency-Key")
	if !p.spec.idempotent || key == "" {
		return claim{}, true
	}
	hash := sha256.Sum256(mustJSON(obj))
	p.mu.Lock()
	verdict, e := p.idem.begin(key, hash, p.opts.Now())
	p.mu.Unlock()
	switch verdict {
	case idemBusy:
		writeError(w, http.StatusConflict, "a request with this idempotency key is in progress")
		return claim{}, false
	case idemMismatch:
		writeError(w, http.StatusUnprocessableEntity, "idempotency key reused with a different request body")
		return claim{}, false
	case idemReplay:
		return claim{key: key, replay: e}, true
	}
	return claim{key: key, held: e}, true
}

// releaseClaim frees the key if the request did not finish; deferred by
// every request that claimed one.
func (p *Provider) releaseClaim(c claim) {
	if c.held == nil {
		return
	}
	p.mu.Lock()
	p.idem.release(c.key, c.held)
	p.mu.Unlock()
}
