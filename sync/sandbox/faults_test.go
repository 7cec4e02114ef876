package sandbox

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireLost asserts that the client got no response at all: EOF or a
// reset, the way a dropped connection looks from outside.
func requireLost(t *testing.T, resp *http.Response, err error) {
	t.Helper()
	require.Nil(t, resp, "a lost response must not reach the client")
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET), "want EOF or reset, got %v", err)
}

// requireTimedOut asserts that the client's own timeout fired.
func requireTimedOut(t *testing.T, err error) {
	t.Helper()
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "want a client timeout, got %v", err)
}

func withTimeout(b *bundle, d time.Duration) *bundle {
	return &bundle{p: b.p, srv: b.srv, client: &http.Client{Timeout: d}}
}

func TestScriptedFaultsAsTheClientSeesThem(t *testing.T) {
	b := setup(t, NewCRM, Options{})
	b.p.Script(Error5xx(0), Error5xx(500), TooMany(3*time.Second), ValidationError("stage unknown"), Hang(), DropAfterCommit(), None())

	r := b.send(t, "POST", "/deals", deal("site_order_1"))
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Equal(t, "injected fault: Service Unavailable", r.body["error"])
	require.Equal(t, http.StatusInternalServerError, b.send(t, "POST", "/deals", deal("site_order_1")).status)

	r = b.send(t, "POST", "/deals", deal("site_order_1"))
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "3", r.header.Get("Retry-After"))

	r = b.send(t, "PUT", "/deals/deal_1", deal("site_order_1"))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "scripted faults apply to PUT too")
	require.Equal(t, "stage unknown", r.body["error"])
	require.Equal(t, 0, b.p.CountByKey("site_order_1"), "no fault so far committed anything")

	start := time.Now()
	_, err := withTimeout(b, 200*time.Millisecond).try("POST", "/deals", deal("site_order_1"))
	requireTimedOut(t, err)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, 0, b.p.CountByKey("site_order_1"), "a hang commits nothing")

	b.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := b.try("POST", "/deals", deal("site_order_1"))
	requireLost(t, resp, err)
	require.Equal(t, 1, b.p.CountByKey("site_order_1"), "the lost response was committed")

	require.Equal(t, http.StatusCreated, b.send(t, "POST", "/deals", deal("site_order_2")).status, "None passes")
	require.Equal(t, map[FaultKind]int{Fault5xx: 2, Fault429: 1, FaultValidation: 1, FaultHang: 1, FaultDropAfterCommit: 1}, b.p.Requests().Faults)
}

// A hang that outlasts HangFor with the client still waiting ends in a
// closed connection, never in an answer.
func TestHangEndsWithoutAnAnswer(t *testing.T) {
	b := setup(t, NewCRM, Options{HangFor: 50 * time.Millisecond})
	b.p.Script(Hang())
	b.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := b.try("POST", "/deals", deal("site_order_1"))
	requireLost(t, resp, err)
	require.Empty(t, b.p.Objects())
}

func TestRatesAtOneAlwaysStrike(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		check func(t *testing.T, b *bundle)
	}{
		{"5xx", Options{Rate5xx: 1}, func(t *testing.T, b *bundle) {
			require.Contains(t, []int{500, 503}, b.send(t, "POST", "/deals", deal("k")).status)
		}},
		{"429", Options{Rate429: 1, RetryAfter: 1500 * time.Millisecond}, func(t *testing.T, b *bundle) {
			r := b.send(t, "POST", "/deals", deal("k"))
			require.Equal(t, http.StatusTooManyRequests, r.status)
			require.Equal(t, "2", r.header.Get("Retry-After"), "whole seconds, rounded up")
		}},
		{"hang", Options{RateHang: 1}, func(t *testing.T, b *bundle) {
			_, err := withTimeout(b, 200*time.Millisecond).try("POST", "/deals", deal("k"))
			requireTimedOut(t, err)
		}},
		{"drop", Options{RateDropAfterCommit: 1}, func(t *testing.T, b *bundle) {
			b.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := b.try("POST", "/deals", deal("k"))
			requireLost(t, resp, err)
			require.Equal(t, 1, b.p.CountByKey("k"))
		}},
		{"validation", Options{RateValidation: 1}, func(t *testing.T, b *bundle) {
			require.Equal(t, http.StatusUnprocessableEntity, b.send(t, "POST", "/deals", deal("k")).status)
		}},
		{"reads spared by default", Options{Rate5xx: 1}, func(t *testing.T, b *bundle) {
			require.Equal(t, http.StatusOK, b.send(t, "GET", "/deals", nil).status)
		}},
		{"reads struck when asked", Options{Rate5xx: 1, FaultReads: true}, func(t *testing.T, b *bundle) {
			require.Contains(t, []int{500, 503}, b.send(t, "GET", "/deals?external_key=k", nil).status)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, NewCRM, tt.opts)
			tt.check(t, b)
			if tt.opts.RateDropAfterCommit == 0 {
				require.Empty(t, b.p.Objects(), "only a lost response commits")
			}
		})
	}
}

// With a seeded source the random faults are reproducible, and every
// request is either a create or a counted fault.
func TestRandomFaultsAreSeededAndCounted(t *testing.T) {
	run := func() Stats {
		b := setup(t, NewCRM, Options{Rate5xx: 0.2, Rate429: 0.2, RateValidation: 0.1, Rand: rand.New(rand.NewPCG(1, 2))})
		for range 100 {
			b.send(t, "POST", "/deals", deal("k"))
		}
		return b.p.Requests()
	}
	first := run()
	require.Equal(t, first, run(), "same seed, same faults")
	f := first.Faults
	require.Equal(t, 100, first.Creates+f[Fault5xx]+f[Fault429]+f[FaultValidation])
	require.Positive(t, f[Fault5xx])
	require.Positive(t, first.Creates)
}

func TestSetOptionsChangesARunningProvider(t *testing.T) {
	b := setup(t, NewCRM, Options{})
	require.Equal(t, http.StatusCreated, b.send(t, "POST", "/deals", deal("k")).status)
	o := b.p.Options()
	o.Rate429 = 1
	b.p.SetOptions(o)
	require.Equal(t, http.StatusTooManyRequests, b.send(t, "POST", "/deals", deal("k")).status)
	require.Same(t, o.Rand, b.p.Options().Rand)
	b.p.SetOptions(Options{})
	require.Equal(t, http.StatusCreated, b.send(t, "POST", "/deals", deal("k")).status)
	require.Same(t, o.Rand, b.p.Options().Rand, "a nil Rand keeps the current source")
}

// Latency is cut short by a client that leaves, and what it delayed is not
// committed afterwards.
func TestLatencyRespectsTheClientLeaving(t *testing.T) {
	b := setup(t, NewCRM, Options{Latency: 10 * time.Second})
	start := time.Now()
	_, err := withTimeout(b, 100*time.Millisecond).try("POST", "/deals", deal("k"))
	requireTimedOut(t, err)
	b.p.SetOptions(Options{})
	b.srv.Close() // waits for the handler, which must have noticed the client left
	require.Less(t, time.Since(start), 5*time.Second)
	require.Empty(t, b.p.Objects())
}
