package config

import (
	"fmt"
	"math"
	"time"
)

// Breaker pauses a service on its own when its provider looks down, and
// probes it until it answers again (sync/services.Breakers).
type Breaker struct {
	// Consecutive temporary failures in a row open the breaker.
	Consecutive int `yaml:"consecutive"`
	// Ratio of temporary failures among at least MinCalls calls within
	// Window opens it too.
	Ratio    float64       `yaml:"ratio"`
	MinCalls int           `yaml:"min_calls"`
	Window   time.Duration `yaml:"window"`
	// ProbeEvery is how often, all instances together, one call tests a
	// provider while its breaker is open.
	ProbeEvery time.Duration `yaml:"probe_every"`
	// Off leaves the service to pause by hand only.
	Off bool `yaml:"off"`
}

// DefaultBreaker suits a provider that is down: 20 failures in a row, or
// half of at least 50 calls in 5 minutes; a probe every 30 s.
var DefaultBreaker = Breaker{Consecutive: 20, Ratio: 0.5, MinCalls: 50, Window: 5 * time.Minute, ProbeEvery: 30 * time.Second}

func (b *Breaker) applyDefaults() {
	if b.Consecutive == 0 {
		b.Consecutive = DefaultBreaker.Consecutive
	}
	if b.Ratio == 0 {
		b.Ratio = DefaultBreaker.Ratio
	}
	if b.MinCalls == 0 {
		b.MinCalls = DefaultBreaker.MinCalls
	}
	if b.Window == 0 {
		b.Window = DefaultBreaker.Window
	}
	if b.ProbeEvery == 0 {
		b.ProbeEvery = DefaultBreaker.ProbeEvery
	}
}

// validate checks the breaker of service name.
func (b Breaker) validate(name string) []error {
	var errs []error
	bad := func(setting, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting services.%s.breaker.%s: %s", name, setting, fmt.Sprintf(format, a...)))
	}
	if b.Consecutive < 1 || b.Consecutive > 10000 {
		bad("consecutive", "must be between 1 and 10000 failures in a row, got %d", b.Consecutive)
	}
	if math.IsNaN(b.Ratio) || b.Ratio <= 0 || b.Ratio > 1 {
		bad("ratio", "must be a share of failed calls above 0 and at most 1, such as 0.5, got %v", b.Ratio)
	}
	if b.MinCalls < 1 || b.MinCalls > 1000000 {
		bad("min_calls", "must be between 1 and 1000000 calls, got %d", b.MinCalls)
	}
	if b.Window < time.Second || b.Window > 24*time.Hour {
		bad("window", "must be a duration between 1s and 24h such as 5m, got %v", b.Window)
	}
	if b.ProbeEvery < time.Second || b.ProbeEvery > time.Hour {
		bad("probe_every", "must be a duration between 1s and 1h such as 30s, got %v", b.ProbeEvery)
	}
	return errs
}
