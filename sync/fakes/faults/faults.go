// Package faults misbehaves in front of a fake provider the way real ones
// do: a 5xx or a 429 before anything is committed, a hang past the
// client's timeout, and the worst of them, an answer lost after the
// provider committed the request. Any http.Handler can be wrapped, so each
// fake of a real provider (sync/fakes/...) models only that provider's
// documented behaviour and shares these faults.
package faults

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Kind is one kind of fault.
type Kind int

// The kinds of fault.
const (
	None     Kind = iota // the request goes through untouched
	Error5xx             // 503 answered, nothing committed
	TooMany              // 429 with Retry-After, nothing committed
	Hang                 // no answer until the client gives up, nothing committed
	Lost                 // committed, then the connection closes with no answer
)

// String names the kind for test messages.
func (k Kind) String() string {
	return [...]string{"none", "5xx", "429", "hang", "lost answer"}[k]
}

// Options are the chances, in [0,1], that a request meets each fault; one
// draw picks at most one, in the order of the fields.
type Options struct {
	Rate5xx, Rate429, RateHang, RateLost float64
	// Reads applies the rates to GET requests too; by default only
	// requests that change something (POST, PUT, PATCH, DELETE) meet them.
	Reads bool
	// RetryAfter is sent with a 429 (default 1s).
	RetryAfter time.Duration
	// HangFor bounds a hang when the client does not give up (default 30s).
	HangFor time.Duration
	// Seed makes the draws repeatable; 0 seeds at random.
	Seed uint64
	// Answer writes the provider's own body for a 5xx or 429; nil writes
	// a small JSON error.
	Answer func(w http.ResponseWriter, status int)
}

// Injector wraps handlers with faults. Safe for concurrent use.
type Injector struct {
	mu     sync.Mutex
	opts   Options
	rnd    *rand.Rand
	script []Kind
	counts map[Kind]int
}

// New returns an injector with opts.
func New(opts Options) *Injector {
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	if opts.HangFor <= 0 {
		opts.HangFor = 30 * time.Second
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Injector{opts: opts, rnd: rand.New(rand.NewPCG(seed, 0xfa17)), counts: map[Kind]int{}}
}

// Script queues faults for the next requests that meet faults, one each, in
// order; while it is not empty it decides alone (a scripted None passes a
// request through).
func (in *Injector) Script(kinds ...Kind) {
	in.mu.Lock()
	in.script = append(in.script, kinds...)
	in.mu.Unlock()
}

// Counts returns how many requests met each fault so far.
func (in *Injector) Counts() map[Kind]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[Kind]int, len(in.counts))
	for k, v := range in.counts {
		out[k] = v
	}
	return out
}

// next draws the fault for one request.
func (in *Injector) next(r *http.Request) Kind {
	in.mu.Lock()
	defer in.mu.Unlock()
	if r.Method == http.MethodGet && !in.opts.Reads {
		return None
	}
	k := None
	if len(in.script) > 0 {
		k, in.script = in.script[0], in.script[1:]
	} else {
		o, u := in.opts, in.rnd.Float64()
		switch {
		case u < o.Rate5xx:
			k = Error5xx
		case u < o.Rate5xx+o.Rate429:
			k = TooMany
		case u < o.Rate5xx+o.Rate429+o.RateHang:
			k = Hang
		case u < o.Rate5xx+o.Rate429+o.RateHang+o.RateLost:
			k = Lost
		}
	}
	in.counts[k]++
	return k
}

// Wrap returns h behind the faults.
func (in *Injector) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch in.next(r) {
		case Error5xx:
			in.answer(w, http.StatusServiceUnavailable)
		case TooMany:
			w.Header().Set("Retry-After", strconv.Itoa(int((in.opts.RetryAfter+time.Second-1)/time.Second)))
			in.answer(w, http.StatusTooManyRequests)
		case Hang:
			// Read the body first: only then does net/http watch the
			// connection and cancel the context when the client gives up.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(in.opts.HangFor):
				in.answer(w, http.StatusGatewayTimeout)
			}
		case Lost:
			// The provider does the work in full, then the answer never
			// arrives: the client cannot tell this from a hang.
			h.ServeHTTP(httptest.NewRecorder(), r)
			drop(w)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

func (in *Injector) answer(w http.ResponseWriter, status int) {
	if in.opts.Answer != nil {
		in.opts.Answer(w, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":"` + http.StatusText(status) + `"}`))
}

// drop closes the connection without a word.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http closes the connection without an answer
}
