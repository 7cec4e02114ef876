package sandbox

import (
	"math/rand/v2"
	"time"
)

// Options shape a provider's latency and faults. The zero value is a fast,
// faultless provider.
type Options struct {
	// Latency is added to every request; a client that goes away cuts it short.
	Latency time.Duration

	// Rate5xx, Rate429, RateHang, RateDropAfterCommit and RateValidation are
	// the chances, in [0,1], that a mutating request (POST, PUT) meets that
	// fault. One draw picks at most one fault, trying them in this order, so
	// the rates add up; when their sum passes 1 the later ones are crowded out.
	Rate5xx             float64
	Rate429             float64
	RateHang            float64
	RateDropAfterCommit float64
	RateValidation      float64

	// Down, when set, is the status every request gets, reads and writes
	// alike, with nothing committed: a provider that is down (503).
	Down int

	// FaultReads applies the rates to GET requests as well (all but
	// RateValidation; a dropped read commits nothing, it only loses the answer).
	FaultReads bool

	// RetryAfter is sent, in whole seconds rounded up, with a random 429 and
	// with TooMany(0). Default 1s.
	RetryAfter time.Duration
	// HangFor is how long a hang lasts while the client waits. Default 30s.
	HangFor time.Duration

	// Now is the clock of the 24-hour idempotency window. Default time.Now.
	Now func() time.Time
	// Rand draws the random faults; the provider guards it with its own
	// mutex, so it must not be used elsewhere. Default: randomly seeded PCG.
	Rand *rand.Rand
}

// withDefaults fills what opts leave unsaid, keeping prev's clock and random
// source so that changing a rate does not reset a seeded sequence.
func (opts Options) withDefaults(prev Options) Options {
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	if opts.HangFor <= 0 {
		opts.HangFor = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = prev.Now
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = prev.Rand
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	for _, r := range []*float64{&opts.Rate5xx, &opts.Rate429, &opts.RateHang, &opts.RateDropAfterCommit, &opts.RateValidation} {
		*r = min(max(*r, 0), 1)
	}
	return opts
}

// FaultKind names one kind of injected fault.
type FaultKind int

// The kinds of fault a provider can inject.
const (
	FaultNone            FaultKind = iota // the request goes through untouched
	Fault5xx                              // a 5xx answer, nothing committed
	Fault429                              // 429 with Retry-After, nothing committed
	FaultHang                             // no answer until the client gives up, nothing committed
	FaultDropAfterCommit                  // committed, then the connection closes with no answer
	FaultValidation                       // 422 with a message, nothing committed
)

// String names the kind the way stats and logs show it.
func (k FaultKind) String() string {
	switch k {
	case Fault5xx:
		return "5xx"
	case Fault429:
		return "429"
	case FaultHang:
		return "hang"
	case FaultDropAfterCommit:
		return "drop_after_commit"
	case FaultValidation:
		return "validation"
	}
	return "none"
}

// Fault is one injected misbehaviour; build it with None, Error5xx, TooMany,
// Hang, DropAfterCommit or ValidationError.
type Fault struct {
	Kind       FaultKind
	Code       int           // the status of a Fault5xx
	RetryAfter time.Duration // the Retry-After of a Fault429; 0 means Options.RetryAfter
	Message    string        // the error of a FaultValidation
}

// None lets one scripted request through untouched, whatever the rates say.
func None() Fault { return Fault{Kind: FaultNone} }

// Error5xx answers with code (503 when 0) without committing.
func Error5xx(code int) Fault {
	if code == 0 {
		code = 503
	}
	return Fault{Kind: Fault5xx, Code: code}
}

// TooMany answers 429 with Retry-After set from retryAfter (0: Options.RetryAfter).
func TooMany(retryAfter time.Duration) Fault {
	return Fault{Kind: Fault429, RetryAfter: retryAfter}
}

// Hang holds the request for Options.HangFor or until the client goes away,
// then closes the connection without an answer; nothing is committed.
func Hang() Fault { return Fault{Kind: FaultHang} }

// DropAfterCommit commits the request, then closes the connection without
// writing a byte: the lost response.
func DropAfterCommit() Fault { return Fault{Kind: FaultDropAfterCommit} }

// ValidationError answers 422 {"error": msg} without committing.
func ValidationError(msg string) Fault {
	if msg == "" {
		msg = "injected validation error"
	}
	return Fault{Kind: FaultValidation, Message: msg}
}
