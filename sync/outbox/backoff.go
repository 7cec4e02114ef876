package outbox

import "time"

// Backoff is the delay before retry number attempt (1 for the first retry):
// exponential from base, capped at max, with full jitter — a uniformly random
// point in [0, cap) — so that many links failing together do not retry
// together. rnd returns a float in [0, 1).
func Backoff(attempt int, base, max time.Duration, rnd func() float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	ceiling := base
	for i := 1; i < attempt && ceiling < max; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, max)
	return time.Duration(rnd() * float64(ceiling))
}
