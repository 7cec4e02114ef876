package ratelimit

import (
	"math"
	"time"
)

// windowBucket turns a provider's "limit requests in any window of length
// w" (HubSpot's rolling 10 seconds) into a bucket that never puts more
// than limit requests in any such window. A bucket of rate r and burst b
// lets at most b + r·w requests through in a window of length w: b at its
// start, then r·w more as it refills. So about a tenth of the allowance is
// burst and the rest is rate.
//
// The allowance is limit less a margin (5%, at least 2): requests travel
// for different times, so their spacing at the provider is not quite the
// spacing at which they left, and the requests of the first moments, sent
// by other instances before the limit was known, may not yet be counted
// in the Remaining the bucket starts from.
func windowBucket(limit int64, w time.Duration) (rate, burst float64) {
	n := float64(limit)
	allow := max(1, n-max(2, math.Ceil(n*0.05)))
	burst = max(1, math.Floor(allow*0.1))
	// With no room left after the burst, one request per window and a
	// little: b + r·w stays under 2.
	rate = max(allow-burst, 0.9) / w.Seconds()
	return rate, burst
}
