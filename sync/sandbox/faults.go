package sandbox

import (
	"math"
	"net/http"
	"strconv"

	"github.com/syncdesk/syncdesk/sync/clock"
)

// Script queues faults for the next mutating requests (POST, PUT, DELETE), one each,
// in order. While the queue is not empty it decides alone: a scripted None
// passes a request through even when the rates would have struck.
func (p *Provider) Script(faults ...Fault) {
	p.mu.Lock()
	p.script = append(p.script, faults...)
	p.mu.Unlock()
}

// nextFault takes the fault for one request: scripted, then random.
func (p *Provider) nextFault(mutating bool) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if mutating && len(p.script) > 0 {
		f := p.script[0]
		p.script = p.script[1:]
		return f
	}
	if !mutating && !p.opts.FaultReads {
		return None()
	}
	return p.drawFault(mutating)
}

// drawFault rolls the rates once; the caller holds the mutex, which is what
// makes the shared *rand.Rand safe.
func (p *Provider) drawFault(mutating bool) Fault {
	o := &p.opts
	u := o.Rand.Float64()
	switch {
	case u < o.Rate5xx:
		return Error5xx([]int{500, 503}[o.Rand.IntN(2)])
	case u < o.Rate5xx+o.Rate429:
		return TooMany(0)
	case u < o.Rate5xx+o.Rate429+o.RateHang:
		return Hang()
	case u < o.Rate5xx+o.Rate429+o.RateHang+o.RateDropAfterCommit:
		return DropAfterCommit()
	case mutating && u < o.Rate5xx+o.Rate429+o.RateHang+o.RateDropAfterCommit+o.RateValidation:
		return ValidationError("")
	}
	return None()
}

// prelude waits out the latency and applies the faults that strike before
// anything is committed. It reports whether the request may go on; when not,
// the answer (or the deliberate lack of one) is already given.
func (p *Provider) prelude(w http.ResponseWriter, r *http.Request, f Fault) bool {
	o := p.Options()
	if !clock.Sleep(r.Context(), o.Latency) {
		return false
	}
	if f.Kind == FaultNone || f.Kind == FaultDropAfterCommit {
		return true
	}
	p.noteFault(f.Kind) // now, not after a hang: tests look as soon as the client gives up
	switch f.Kind {
	case Fault5xx:
		writeError(w, f.Code, "injected fault: "+http.StatusText(f.Code))
	case Fault429:
		retry := f.RetryAfter
		if retry <= 0 {
			retry = o.RetryAfter
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		writeError(w, http.StatusTooManyRequests, "rate limited, retry later")
	case FaultValidation:
		writeError(w, http.StatusUnprocessableEntity, f.Message)
	case FaultHang:
		if clock.Sleep(r.Context(), o.HangFor) {
			drop(w) // the client outlasted the hang: still no answer
		}
	}
	return false
}

// respond writes a committed answer, or loses it when the fault says so.
func (p *Provider) respond(w http.ResponseWriter, f Fault, status int, body []byte) {
	if f.Kind == FaultDropAfterCommit {
		p.noteFault(f.Kind)
		drop(w)
		return
	}
	writeRaw(w, status, body)
}

// drop closes the connection without writing a byte of response, so the
// client sees EOF or a reset, never a status.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 and writers that cannot hijack: abort the handler, which
		// resets the stream or closes the connection without an answer.
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}
