package ratelimit

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var headerNow = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

func answer(status int, kv ...string) *http.Response {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: status, Header: h}
}

// What each family of headers says, as the providers document them.
func TestSignalsFromHeaders(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		res  *http.Response
		want signal
	}{
		{"none", answer(200), signal{remaining: -1}},
		{"HubSpot", answer(200, "X-HubSpot-RateLimit-Max", "50", "X-HubSpot-RateLimit-Interval-Milliseconds", "10000",
			"X-HubSpot-RateLimit-Remaining", "49", "X-HubSpot-RateLimit-Daily", "250000"),
			signal{limit: 50, window: 10 * s, remaining: 49, headers: true, source: "X-HubSpot-RateLimit"}},
		{"HubSpot refusal", answer(429, "X-HubSpot-RateLimit-Max", "50", "X-HubSpot-RateLimit-Interval-Milliseconds", "10000",
			"X-HubSpot-RateLimit-Remaining", "0", "Retry-After", "3"),
			signal{limit: 50, window: 10 * s, remaining: 0, throttled: true, retryAfter: 3 * s, headers: true, source: "X-HubSpot-RateLimit"}},
		{"HubSpot without interval", answer(200, "X-HubSpot-RateLimit-Max", "50", "X-HubSpot-RateLimit-Remaining", "7"),
			signal{remaining: 7, headers: true, source: "X-HubSpot-RateLimit"}},
		{"draft 06", answer(200, "RateLimit-Limit", "100, 100;w=60", "RateLimit-Remaining", "20", "RateLimit-Reset", "30"),
			signal{limit: 100, window: 60 * s, remaining: 20, reset: 30 * s, headers: true, source: "RateLimit"}},
		{"draft 06, no window", answer(200, "RateLimit-Limit", "10", "RateLimit-Remaining", "3"),
			signal{remaining: 3, headers: true, source: "RateLimit"}},
		{"draft 06 policies: the tighter per second", answer(200, "RateLimit-Limit", "10", "RateLimit-Policy", "10;w=1, 100;w=60"),
			signal{limit: 100, window: 60 * s, remaining: -1, headers: true, source: "RateLimit"}},
		{"draft 07 on, a day's quota is not paced", answer(200, "RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400`,
			"RateLimit", `"burst";r=5;t=30`), signal{limit: 100, window: 60 * s, remaining: 5, reset: 30 * s, headers: true, source: "RateLimit"}},
		{"draft 07 on, the smallest remaining", answer(200, "RateLimit", `"a";r=5;t=30, "b";r=0;t=4`),
			signal{remaining: 0, reset: 4 * s, headers: true, source: "RateLimit"}},
		{"X-RateLimit with a Unix reset", answer(200, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", strconv.FormatInt(headerNow.Add(90*s).Unix(), 10)),
			signal{remaining: 0, reset: 90 * s, headers: true, source: "X-RateLimit"}},
		{"X-RateLimit with seconds", answer(200, "X-RateLimit-Remaining", "12", "X-RateLimit-Reset", "1.5"),
			signal{remaining: 12, reset: 1500 * time.Millisecond, headers: true, source: "X-RateLimit"}},
		{"X-RateLimit with Unix milliseconds", answer(200, "X-RateLimit-Remaining", "1", "X-RateLimit-Reset",
			strconv.FormatInt(headerNow.Add(2*s).UnixMilli(), 10)), signal{remaining: 1, reset: 2 * s, headers: true, source: "X-RateLimit"}},
		{"Retry-After as a date on a 503", answer(503, "Retry-After", headerNow.Add(2*time.Minute).Format(http.TimeFormat)),
			signal{remaining: -1, throttled: true, retryAfter: 2 * time.Minute, headers: true, source: "Retry-After"}},
		{"Retry-After on a 200 is not a refusal", answer(200, "Retry-After", "5"), signal{remaining: -1}},
		{"a 503 without Retry-After is an outage, not a limit", answer(503), signal{remaining: -1}},
		{"a 429 without headers", answer(429), signal{remaining: -1, throttled: true}},
		{"unreadable values are ignored", answer(200, "X-HubSpot-RateLimit-Max", "lots", "X-HubSpot-RateLimit-Interval-Milliseconds", "-5",
			"X-HubSpot-RateLimit-Remaining", "some"), signal{remaining: -1, headers: true, source: "X-HubSpot-RateLimit"}},
		{"a past reset and a negative remaining", answer(200, "X-RateLimit-Remaining", "-3", "X-RateLimit-Reset", "1000000001"),
			signal{remaining: 0, headers: true, source: "X-RateLimit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseSignal(tc.res, headerNow)
			got.rate, got.burst = 0, 0 // windowBucket's own test checks them
			require.Equal(t, tc.want, got)
		})
	}
}

// Several policies give a bucket that keeps under each: the smaller rate
// of one and the smaller burst of the other.
func TestSeveralPoliciesKeepUnderEach(t *testing.T) {
	got := parseSignal(answer(200, "RateLimit-Policy", "10;w=1, 100;w=60"), headerNow)
	r1, b1 := windowBucket(10, time.Second)
	r60, b60 := windowBucket(100, time.Minute)
	require.Equal(t, min(r1, r60), got.rate)
	require.Equal(t, min(b1, b60), got.burst)
	require.Equal(t, r60, got.rate)
	require.Equal(t, b1, got.burst)
}

// FuzzParseSignal: no header a provider sends can panic the parser or
// yield a negative limit, window, reset or wait.
func FuzzParseSignal(f *testing.F) {
	f.Add(429, "50", "10000", "49", "3", "100, 100;w=60", `"a";r=5;t=30`, "1700000000")
	f.Add(200, "", "", "", "Wed, 21 Oct 2026 07:28:00 GMT", `"x";q=;w=`, ";;==,,", "1e400")
	f.Add(503, "-1", "99999999999999999999", "x", "-7", "5;w=-1", `r=-1`, "NaN")
	f.Fuzz(func(t *testing.T, status int, max, interval, rem, retry, policy, rl, reset string) {
		res := answer(status, "X-HubSpot-RateLimit-Max", max, "X-HubSpot-RateLimit-Interval-Milliseconds", interval,
			"X-HubSpot-RateLimit-Remaining", rem, "Retry-After", retry)
		for _, r := range []*http.Response{res, answer(status, "RateLimit-Policy", policy, "RateLimit", rl, "RateLimit-Reset", reset),
			answer(status, "RateLimit-Limit", policy, "X-RateLimit-Reset", reset), answer(status, "X-RateLimit-Remaining", rem, "X-RateLimit-Reset", reset)} {
			s := parseSignal(r, headerNow)
			if s.limit < 0 || s.window < 0 || s.window > maxPacedWindow || s.reset < 0 || s.retryAfter < 0 || s.remaining < -1 {
				t.Fatalf("%+v from %v", s, r.Header)
			}
			if (s.limit > 0) != (s.rate > 0) || (s.rate > 0 && s.burst < 1) {
				t.Fatalf("a limit without a bucket: %+v from %v", s, r.Header)
			}
		}
	})
}
