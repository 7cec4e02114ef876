package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBreakerValuesNameTheSetting(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"breaker: {consecutive: -1}", "setting services.crm.breaker.consecutive: must be between 1 and 10000 failures in a row, got -1"},
		{"breaker: {ratio: 1.5}", "setting services.crm.breaker.ratio: must be a share of failed calls above 0 and at most 1, such as 0.5, got 1.5"},
		{"breaker: {ratio: -0.1}", "setting services.crm.breaker.ratio: must be a share"},
		{"breaker: {ratio: .nan}", "setting services.crm.breaker.ratio: must be a share"},
		{"breaker: {min_calls: -5}", "setting services.crm.breaker.min_calls: must be between 1 and 1000000 calls, got -5"},
		{"breaker: {window: 10ms}", "setting services.crm.breaker.window: must be a duration between 1s and 24h such as 5m, got 10ms"},
		{"breaker: {probe_every: 2h}", "setting services.crm.breaker.probe_every: must be a duration between 1s and 1h such as 30s, got 2h0m0s"},
		{"breaker: {probe_every: soon}", "setting services.crm.breaker.probe_every: `soon` is not a duration"},
		{"breaker: {consecutiv: 3}", ".consecutiv: there is no such setting"},
	} {
		_, err := Load(writeFile(t, svc(tc.yaml)), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}

func TestBreakerDefaultsSuitAProviderThatIsDown(t *testing.T) {
	cfg, err := Load(writeFile(t, svc("")), Overrides{})
	require.NoError(t, err)
	require.Equal(t, Breaker{Consecutive: 20, Ratio: 0.5, MinCalls: 50, Window: 5 * time.Minute, ProbeEvery: 30 * time.Second},
		cfg.Services["crm"].Breaker)

	cfg, err = Load(writeFile(t, svc("breaker: {consecutive: 5, probe_every: 1m, off: true}")), Overrides{})
	require.NoError(t, err)
	require.Equal(t, Breaker{Consecutive: 5, Ratio: 0.5, MinCalls: 50, Window: 5 * time.Minute, ProbeEvery: time.Minute, Off: true},
		cfg.Services["crm"].Breaker, "what is left unsaid takes the default")
}
