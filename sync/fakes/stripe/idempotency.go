package stripe

import (
	"net/http"
	"time"
)

// Idempotent requests, as https://docs.stripe.com/api/idempotent_requests
// says they work:
//   - "Stripe saves the status code and body of the first request made with
//     a given idempotency key after endpoint execution begins. Retries with
//     the same key return the saved response, including 500 errors."
//   - "The idempotency layer compares incoming parameters to those of the
//     original request and errors if they're not the same" (an
//     idempotency_error: "an Idempotency-Key is re-used on a request that
//     does not match the first request's API endpoint and parameters").
//   - "If incoming parameters fail validation, or the request conflicts
//     with another request that's executing concurrently, we don't save the
//     idempotent result": a request meeting a key still in flight gets a
//     409 (idempotency_key_in_use, https://docs.stripe.com/error-codes) and
//     may be retried.
//   - Keys can be removed "after they're at least 24 hours old. We generate
//     a new request if a key is reused after the original is pruned."
//   - "Idempotency keys are up to 255 characters long", and only POST
//     requests use them: GET and DELETE "are idempotent by definition".
//
// Replays carry Idempotent-Replayed: true and Original-Request, the
// Request-Id of the first answer.

// KeyLifetime is how long an idempotency key's answer is replayed.
const KeyLifetime = 24 * time.Hour

// maxKeyLen is the longest Idempotency-Key Stripe takes.
const maxKeyLen = 255

// idemID names a key within one account: keys of different API keys never
// meet.
type idemID struct{ apiKey, key string }

// saved is what one idempotency key remembers.
type saved struct {
	request   string // method, path and canonical parameters of the first request
	at        time.Time
	done      bool
	status    int
	body      []byte
	requestID string
}

// verdict is what a request carrying a key may do.
type verdict int

const (
	fresh    verdict = iota // first use, or the old one expired: run it
	replay                  // answer with the saved response
	inFlight                // the first request is still running: 409
	mismatch                // other parameters or another endpoint: 400
)

// claimKey decides what a request with key, fingerprinted as request, may
// do, and reserves the key when it is fresh. The caller holds s.mu.
func (s *Server) claimKey(id idemID, request string, now time.Time) (verdict, *saved) {
	e := s.keys[id]
	if e != nil && e.done && !now.Before(e.at.Add(KeyLifetime)) {
		delete(s.keys, id) // pruned: a reuse is a new request
		e = nil
	}
	switch {
	case e == nil:
		e = &saved{request: request, at: now}
		s.keys[id] = e
		return fresh, e
	case !e.done:
		return inFlight, e
	case e.request != request:
		return mismatch, e
	}
	return replay, e
}

// idempotent runs a POST under its Idempotency-Key, if it has one: it
// answers an in-flight key, a mismatch or a replay itself; otherwise it
// calls run and saves its answer unless run refused the request before
// the endpoint began.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, apiKey, canonical string, run func() (int, []byte, bool)) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		status, body, _ := run()
		writeRaw(w, status, body, newRequestID())
		return
	}
	if len(key) > maxKeyLen {
		writeError(w, invalidRequest("Invalid Idempotency-Key: it is %d characters long; the limit is %d.", len(key), maxKeyLen))
		return
	}
	id := idemID{apiKey: apiKey, key: key}
	s.mu.Lock()
	v, e := s.claimKey(id, r.Method+" "+r.URL.Path+"?"+canonical, s.now())
	if v == replay {
		s.replays++
	}
	s.mu.Unlock()
	switch v {
	case inFlight:
		writeError(w, idempotencyInUse(key))
		return
	case mismatch:
		writeError(w, idempotencyMismatch(key))
		return
	case replay:
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("Original-Request", e.requestID)
		writeRaw(w, e.status, e.body, newRequestID())
		return
	}
	status, body, keep := run()
	reqID := newRequestID()
	s.mu.Lock()
	if keep {
		e.done, e.status, e.body, e.requestID = true, status, body, reqID
	} else if s.keys[id] == e {
		delete(s.keys, id) // refused before it ran: a corrected retry runs
	}
	s.mu.Unlock()
	writeRaw(w, status, body, reqID)
}
