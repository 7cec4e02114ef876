package ratelimit

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/sync/connector"
)

// signal is what one answer says about the provider's limit.
type signal struct {
	// limit requests in any window of length window: of the policies
	// said, the one allowing the fewest per second; 0 when none was.
	limit  int64
	window time.Duration
	// rate and burst make the bucket that keeps under every policy said.
	rate, burst float64
	// remaining is how many more the provider allows in its current
	// window; -1 when not said.
	remaining int64
	// reset is how long until the current window frees; 0 when not said.
	reset time.Duration
	// throttled is a refusal for going too fast: a 429, or a 503 that
	// says when to come back; retryAfter is that Retry-After.
	throttled  bool
	retryAfter time.Duration
	// headers says the answer carried any rate limit header at all.
	headers bool
	// source names the headers read, for the log and the services page.
	source string
}

// parseSignal reads the rate limit headers of an answer received at now:
//   - HubSpot's X-HubSpot-RateLimit-Max, -Interval-Milliseconds and
//     -Remaining: Max requests per rolling interval
//     (https://developers.hubspot.com/docs/api/usage-details);
//   - the IETF draft's RateLimit-Limit, -Remaining, -Reset and
//     RateLimit-Policy (draft 06), and RateLimit with RateLimit-Policy
//     (draft 07 and later; https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/);
//   - the common X-RateLimit-Limit, -Remaining and -Reset, whose reset is
//     seconds from now or a Unix time (GitHub), and which never say the
//     window;
//   - Retry-After on a 429 or 503, in seconds or as an HTTP date.
//
// Values that do not parse are ignored: a provider's odd header must never
// stop the sending.
func parseSignal(res *http.Response, now time.Time) signal {
	h := res.Header
	s := signal{remaining: -1}
	if ra := h.Get("Retry-After"); ra != "" && (res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable) {
		s.retryAfter, s.throttled = connector.RetryAfter(ra, now, math.MaxInt64), true // capped later (Options.MaxBlock)
		s.headers, s.source = true, "Retry-After"
	}
	if res.StatusCode == http.StatusTooManyRequests {
		s.throttled = true
	}
	switch {
	case h.Get("X-HubSpot-RateLimit-Max") != "" || h.Get("X-HubSpot-RateLimit-Remaining") != "":
		s.source = "X-HubSpot-RateLimit"
		ms := count(h.Get("X-HubSpot-RateLimit-Interval-Milliseconds"))
		s.addPolicy(count(h.Get("X-HubSpot-RateLimit-Max")), time.Duration(min(ms, math.MaxInt32))*time.Millisecond)
		s.remaining = remaining(h.Get("X-HubSpot-RateLimit-Remaining"))
	case h.Get("RateLimit") != "" || h.Get("RateLimit-Policy") != "" || h.Get("RateLimit-Limit") != "":
		s.source = "RateLimit"
		s.draft(h, now)
	case h.Get("X-RateLimit-Limit") != "" || h.Get("X-RateLimit-Remaining") != "":
		s.source = "X-RateLimit"
		s.remaining = remaining(h.Get("X-RateLimit-Remaining"))
		s.reset = resetIn(h.Get("X-RateLimit-Reset"), now)
	default:
		return s
	}
	s.headers = true
	return s
}

// maxPacedWindow is the longest window paced by a bucket. Longer ones are
// quotas (a day's requests): paced, a burst of a tenth would then trickle
// for the rest of the day. They are spent as fast as the shorter limits
// allow, and their Remaining stops the calls when it runs out.
const maxPacedWindow = time.Minute

// addPolicy adds "q requests per window w" to what the answer says: the
// bucket keeps the smaller rate and the smaller burst of all of them, so
// it keeps under each.
func (s *signal) addPolicy(q int64, w time.Duration) {
	if q <= 0 || w <= 0 || w > maxPacedWindow {
		return
	}
	r, b := windowBucket(q, w)
	if s.rate == 0 || r < s.rate {
		s.rate, s.limit, s.window = r, q, w
	}
	if s.burst == 0 || b < s.burst {
		s.burst = b
	}
}

// draft reads the IETF draft's fields, old and new. The old
// RateLimit-Limit may carry its policies after the number
// ("100, 100;w=60"); the new RateLimit-Policy names them
// ("default";q=100;w=60) and RateLimit says what remains
// ("default";r=50;t=30). Of several remaining counts the smallest holds.
func (s *signal) draft(h http.Header, now time.Time) {
	s.remaining = remaining(h.Get("RateLimit-Remaining"))
	s.reset = resetIn(h.Get("RateLimit-Reset"), now)
	for _, v := range []string{h.Get("RateLimit-Policy"), h.Get("RateLimit-Limit")} {
		for _, p := range strings.Split(v, ",") {
			s.addPolicy(policy(p))
		}
	}
	if v := h.Get("RateLimit"); v != "" {
		for _, item := range strings.Split(v, ",") {
			params := sfParams(item)
			if r, ok := params["r"]; ok && (s.remaining < 0 || remaining(r) < s.remaining) {
				s.remaining = remaining(r)
				s.reset = resetIn(params["t"], now)
			}
		}
	}
}

// policy reads one policy: "100;w=60" (draft 06) or "name";q=100;w=60
// (draft 07 on). A bare number has no window and reads as none.
func policy(item string) (int64, time.Duration) {
	params := sfParams(item)
	q := params["q"]
	if q == "" {
		q = params[""] // draft 06: the quota is the item itself
	}
	return count(q), time.Duration(min(count(params["w"]), math.MaxInt32)) * time.Second
}

// sfParams splits a structured-field item ("x";a=1;b=2) into its
// parameters, the item itself under "".
func sfParams(item string) map[string]string {
	out := map[string]string{}
	for i, part := range strings.Split(item, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if i == 0 && !ok {
			out[""] = strings.Trim(k, `"`)
			continue
		}
		out[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	return out
}

// count reads a non-negative whole number; 0 when it is not one.
func count(v string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// remaining reads a count of remaining requests; -1 when it is not one.
func remaining(v string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return -1
	}
	return max(n, 0)
}

// unixReset tells a Unix time from seconds to wait: no window lasts 30
// years, and Unix times have been past a billion since 2001.
const unixReset = 1_000_000_000

// resetIn reads a reset as seconds from now or, when large, as a Unix time
// in seconds (or milliseconds); 0 when absent, past or unreadable.
func resetIn(v string, now time.Time) time.Duration {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		return 0
	}
	var d time.Duration
	switch {
	case f >= unixReset*1000:
		d = time.UnixMilli(int64(f)).Sub(now)
	case f >= unixReset:
		d = time.Unix(int64(f), 0).Sub(now)
	case f < math.MaxInt64/float64(time.Second):
		d = time.Duration(f * float64(time.Second))
	}
	return max(d, 0)
}
