package ratelimit

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// windowProvider enforces limit requests per rolling window the way HubSpot
// does per 10 seconds (https://developers.hubspot.com/docs/api/usage-details):
// every answer carries X-HubSpot-RateLimit-Max, -Interval-Milliseconds and
// -Remaining, and a request beyond the limit is refused with a 429 whose
// body names the TEN_SECONDLY_ROLLING policy, with a Retry-After of the
// seconds until the oldest request leaves the window. A refused request is
// not counted. It also measures what the tests claim: requests in flight
// at once, and those that arrived before its first answer went out.
type windowProvider struct {
	limit   int
	window  time.Duration
	work    time.Duration // how long each request takes to answer
	headers bool          // send the HubSpot headers

	mu           sync.Mutex
	hits         []time.Time // every accepted request, in order
	refused      int
	inFlight     int
	maxInFlight  int
	answered     bool
	beforeAnswer int                                // requests that arrived before the first answer
	answeredOK   bool                               // a request was let through
	maxBeforeOK  int                                // the most in flight before then
	script       []func(w http.ResponseWriter) bool // answers to give first, in order
}

func newWindowProvider(t *testing.T, limit int, window time.Duration) (*windowProvider, string) {
	p := &windowProvider{limit: limit, window: window, headers: true}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *windowProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	p.mu.Lock()
	p.inFlight++
	p.maxInFlight = max(p.maxInFlight, p.inFlight)
	if !p.answered {
		p.beforeAnswer++
	}
	if !p.answeredOK {
		p.maxBeforeOK = max(p.maxBeforeOK, p.inFlight)
	}
	p.mu.Unlock()
	time.Sleep(p.work)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight--
	p.answered = true
	if len(p.script) > 0 {
		next := p.script[0]
		p.script = p.script[1:]
		if next(w) {
			return
		}
	}
	now := time.Now()
	inWindow := p.countSince(now.Add(-p.window))
	if inWindow >= p.limit {
		p.refused++
		oldest := p.hits[len(p.hits)-inWindow]
		p.setHeaders(w, 0)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(oldest.Add(p.window).Sub(now).Seconds()))))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = fmt.Fprint(w, `{"status":"error","message":"You have reached your ten_secondly_rolling limit.","errorType":"RATE_LIMIT","policyName":"TEN_SECONDLY_ROLLING"}`)
		return
	}
	p.hits = append(p.hits, now)
	p.answeredOK = true
	p.setHeaders(w, p.limit-inWindow-1)
	_, _ = fmt.Fprint(w, `{"id":"1"}`)
}

func (p *windowProvider) setHeaders(w http.ResponseWriter, remaining int) {
	if !p.headers {
		return
	}
	w.Header().Set("X-HubSpot-RateLimit-Max", strconv.Itoa(p.limit))
	w.Header().Set("X-HubSpot-RateLimit-Interval-Milliseconds", strconv.FormatInt(p.window.Milliseconds(), 10))
	w.Header().Set("X-HubSpot-RateLimit-Remaining", strconv.Itoa(remaining))
}

// countSince counts the accepted requests after since; p.mu is held.
func (p *windowProvider) countSince(since time.Time) int {
	n := 0
	for i := len(p.hits) - 1; i >= 0 && p.hits[i].After(since); i-- {
		n++
	}
	return n
}

// busiest is the most requests accepted in any window of length d, both
// ends included.
func (p *windowProvider) busiest(d time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	most, j := 0, 0
	for i := range p.hits {
		for p.hits[i].Sub(p.hits[j]) > d {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// span is the time from the first accepted request to the last.
func (p *windowProvider) span() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.hits) == 0 {
		return 0
	}
	return p.hits[len(p.hits)-1].Sub(p.hits[0])
}

type providerCounts struct{ accepted, refused, maxInFlight, beforeAnswer, maxBeforeOK int }

func (p *windowProvider) counts() providerCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return providerCounts{len(p.hits), p.refused, p.maxInFlight, p.beforeAnswer, p.maxBeforeOK}
}

// answerOnce queues an answer for the next request; the function writes
// it and returns true, or returns false to let the request through.
func (p *windowProvider) answerOnce(f func(w http.ResponseWriter) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.script = append(p.script, f)
}
