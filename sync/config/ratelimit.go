package config

import (
	"fmt"
	"math"
)

// Bounds of a rate limit's settings: beyond them a value is a typo (a
// burst of a million lets every backlog through at once) rather than a
// provider's real limit.
const (
	maxPerSecond  = 10000
	maxBurst      = 10000
	maxConcurrent = 1024
)

// BurstSize is the configured burst, or its default: PerSecond rounded up,
// at least 1. It is 0 when no rate is configured.
func (r RateLimit) BurstSize() int {
	if r.PerSecond <= 0 {
		return 0
	}
	if r.Burst > 0 {
		return r.Burst
	}
	return max(1, int(math.Ceil(r.PerSecond)))
}

// validate checks the rate limit of service name.
func (r RateLimit) validate(name string) []error {
	var errs []error
	bad := func(setting, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting services.%s.rate_limit.%s: %s", name, setting, fmt.Sprintf(format, a...)))
	}
	switch {
	case math.IsNaN(r.PerSecond) || math.IsInf(r.PerSecond, 0):
		bad("per_second", "must be a number of requests per second such as 10 or 0.5, got %v", r.PerSecond)
	case r.PerSecond < 0 || r.PerSecond > maxPerSecond:
		bad("per_second", "must be between 0 (no limit) and %d requests per second, got %v", maxPerSecond, r.PerSecond)
	}
	if r.Burst < 0 || r.Burst > maxBurst {
		bad("burst", "must be between 1 and %d requests, got %d", maxBurst, r.Burst)
	} else if r.Burst > 0 && r.PerSecond == 0 {
		bad("burst", "a burst needs per_second: set the steady rate the burst refills at")
	}
	if r.Concurrent < 0 || r.Concurrent > maxConcurrent {
		bad("concurrent", "must be between 0 (the engine's own concurrency) and %d requests in flight, got %d", maxConcurrent, r.Concurrent)
	}
	return errs
}
