package config

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRateLimitValuesNameTheSetting(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"rate_limit: {per_second: -1}", "setting services.crm.rate_limit.per_second: must be between 0 (no limit) and 10000 requests per second, got -1"},
		{"rate_limit: {per_second: .nan}", "setting services.crm.rate_limit.per_second: must be a number of requests per second"},
		{"rate_limit: {per_second: .inf}", "setting services.crm.rate_limit.per_second: must be a number"},
		{"rate_limit: {per_second: 20000}", "setting services.crm.rate_limit.per_second: must be between 0"},
		{"rate_limit: {per_second: 5, burst: -2}", "setting services.crm.rate_limit.burst: must be between 1 and 10000 requests, got -2"},
		{"rate_limit: {burst: 5}", "setting services.crm.rate_limit.burst: a burst needs per_second"},
		{"rate_limit: {concurrent: -1}", "setting services.crm.rate_limit.concurrent: must be between 0 (the engine's own concurrency) and 1024 requests in flight, got -1"},
		{"rate_limit: {per_second: ten}", "setting services.crm.rate_limit.per_second: `ten` is not a number"},
		{"rate_limit: {per_secnd: 1}", ".per_secnd: there is no such setting"},
	} {
		_, err := Load(writeFile(t, svc(tc.yaml)), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}

func TestGoodRateLimitsLoad(t *testing.T) {
	for _, y := range []string{"", "rate_limit: {}", "rate_limit: {per_second: 0.5}", "rate_limit: {per_second: 10, burst: 20, concurrent: 4}",
		"rate_limit: {concurrent: 1}"} {
		_, err := Load(writeFile(t, svc(y)), Overrides{})
		require.NoError(t, err, y)
	}
}

func TestBurstDefaultsToTheRateRoundedUp(t *testing.T) {
	for _, tc := range []struct {
		r    RateLimit
		want int
	}{
		{RateLimit{}, 0},
		{RateLimit{PerSecond: 0.5}, 1},
		{RateLimit{PerSecond: 4.3}, 5},
		{RateLimit{PerSecond: 10}, 10},
		{RateLimit{PerSecond: 10, Burst: 3}, 3},
		{RateLimit{PerSecond: math.SmallestNonzeroFloat64}, 1},
	} {
		require.Equal(t, tc.want, tc.r.BurstSize(), "%+v", tc.r)
	}
}
