// Package stripe is a fake of Stripe's API for customers and payment
// intents, written from Stripe's API reference (each rule cites its page):
// form-encoded bodies with bracket notation, API-key auth, Stripe's error
// shape, list pagination, the search query language with search that lags
// behind writes, and idempotency keys replayed for 24 hours. It is an
// http.Handler serving /v1/...; tests run it under httptest, behind
// sync/fakes/faults for the faults real networks add. The conformance test
// holds it to Stripe's own mock (sync/fakes/stripemock).
package stripe

import (
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultSearchLag is how far search trails writes unless Options say:
// "data is searchable in under 1 minute" (https://docs.stripe.com/search).
const DefaultSearchLag = time.Minute

// Options tune a Server; the zero value is Stripe as documented.
type Options struct {
	// APIKey is the one secret key accepted; empty accepts any test-mode
	// secret key (sk_test_...), as stripe-mock does.
	APIKey string
	// SearchLag is how long a create or update stays invisible to search
	// (0: DefaultSearchLag; negative: none). List and retrieve never lag.
	SearchLag time.Duration
	// Now is the clock for created times, key expiry and search lag
	// (default time.Now).
	Now func() time.Time
	// Executing, if set, is called while a create or update runs, after
	// its idempotency key is reserved and before it is committed; a test
	// blocks in it to hold a request in flight.
	Executing func(r *http.Request)
	// Fault, if set, is asked about each create or update once its
	// idempotency key is reserved, inside the idempotency layer (unlike
	// sync/fakes/faults, which wraps the whole server): a request it fails
	// gets Stripe's 500 api_error, saved under its key and replayed to
	// every retry with that key, as Stripe does.
	Fault func(r *http.Request) Fault
}

// Fault is a server error a create or update meets inside Stripe.
type Fault int

// Faults. Stripe calls the result of a 500 indeterminate
// (https://docs.stripe.com/error-low-level#server-errors): the request may
// have taken effect or not.
const (
	NoFault         Fault = iota
	FailBefore            // 500, nothing done
	FailAfterCommit       // 500, the object made (or changed) all the same
)

// Server is the fake Stripe API. Safe for concurrent use.
type Server struct {
	opts Options
	mux  *http.ServeMux

	mu       sync.Mutex // guards everything below
	tables   map[*resource]*table
	seq      int64
	keys     map[idemID]*saved
	creates  map[string]int
	requests map[string]int
	replays  int
}

// New returns a Server with no objects.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	switch {
	case opts.SearchLag == 0:
		opts.SearchLag = DefaultSearchLag
	case opts.SearchLag < 0:
		opts.SearchLag = 0
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), keys: map[idemID]*saved{},
		tables: map[*resource]*table{}, creates: map[string]int{}, requests: map[string]int{}}
	for _, res := range []*resource{customers, paymentIntents} {
		s.tables[res] = newTable()
		base := "/v1/" + res.path
		s.mux.Handle("POST "+base, s.write(res, s.create))
		s.mux.Handle("POST "+base+"/{id}", s.write(res, s.update))
		s.mux.Handle("GET "+base, s.read(res, s.list))
		s.mux.Handle("GET "+base+"/search", s.read(res, s.search))
		s.mux.Handle("GET "+base+"/{id}", s.read(res, s.retrieve))
	}
	// Customers can be deleted; payment intents only cancelled.
	s.mux.Handle("DELETE /v1/customers/{id}", s.read(customers, s.remove))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeError(w, unrecognizedURL(r)) })
	return s
}

func (s *Server) now() time.Time { return s.opts.Now() }

// ServeHTTP authenticates, counts and routes one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pattern := s.mux.Handler(r)
	if pattern == "/" {
		pattern = r.Method + " (unrecognized)"
	}
	s.mu.Lock()
	s.requests[pattern]++
	s.mu.Unlock()
	key, ok := s.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="Stripe"`)
		writeError(w, authError(key))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// authenticate reads the API key: "Provide your API key as the basic auth
// username value. You do not need to provide a password", or as a bearer
// token; test-mode secret keys start sk_test_
// (https://docs.stripe.com/api/authentication). It returns the key given,
// even when refused, so the refusal can name its last characters.
func (s *Server) authenticate(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	var key string
	switch {
	case strings.HasPrefix(h, "Bearer "):
		key = strings.TrimSpace(h[len("Bearer "):])
	case strings.HasPrefix(h, "Basic "):
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[len("Basic "):]))
		if err != nil {
			return "", false
		}
		key, _, _ = strings.Cut(string(raw), ":")
	default:
		return "", false
	}
	if s.opts.APIKey != "" {
		return key, key == s.opts.APIKey
	}
	return key, strings.HasPrefix(key, "sk_test_") && len(key) > len("sk_test_")
}

// endpoint answers one request on its decoded parameters. A refusal marked
// validation is not saved under an idempotency key.
type endpoint func(r *http.Request, res *resource, p params) (any, *apiError)

// write serves a POST: parameters, idempotency key, then the endpoint.
func (s *Server) write(res *resource, fn endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, canonical, perr := readForm(r)
		if perr != nil {
			writeError(w, perr)
			return
		}
		if k := r.Header.Get("Idempotency-Key"); k != "" {
			w.Header().Set("Idempotency-Key", k)
		}
		apiKey, _ := s.authenticate(r) // ServeHTTP let it in; keys belong to it
		s.idempotent(w, r, apiKey, canonical, func() (int, []byte, bool) {
			fault := s.fault(r)
			if fault == FailBefore {
				return http.StatusInternalServerError, mustJSON(serverError().body()), true
			}
			out, err := fn(r, res, p)
			switch {
			case err != nil:
				return err.status, mustJSON(err.body()), !err.validation
			case fault == FailAfterCommit:
				return http.StatusInternalServerError, mustJSON(serverError().body()), true
			}
			return http.StatusOK, mustJSON(out), true
		})
	})
}

// fault is the server error, if any, that Options.Fault has r meet.
func (s *Server) fault(r *http.Request) Fault {
	if s.opts.Fault == nil {
		return NoFault
	}
	return s.opts.Fault(r)
}

// read serves a request that takes no idempotency key: a GET, or a
// DELETE, idempotent by definition.
func (s *Server) read(res *resource, fn endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _, perr := readForm(r)
		if perr != nil {
			writeError(w, perr)
			return
		}
		out, err := fn(r, res, p)
		if err != nil {
			writeError(w, err)
			return
		}
		writeRaw(w, http.StatusOK, mustJSON(out), newRequestID())
	})
}

// writeError answers with Stripe's error shape.
func writeError(w http.ResponseWriter, e *apiError) {
	writeRaw(w, e.status, mustJSON(e.body()), newRequestID())
}

// writeRaw answers with a JSON body and a Request-Id, as every Stripe
// answer carries one.
func writeRaw(w http.ResponseWriter, status int, body []byte, requestID string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", requestID)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func newRequestID() string { return "req_" + randomID(14) }
