package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
)

// Under a low rate the calls wait their turns, and the histogram says so:
// ten calls one after another at 5 a second, with a burst of 1, each wait
// for their own turn, 0.2 s after the last one's (the first goes at once);
// each call is one sample, whether it waited or not.
func TestWaitsAreCountedUnderALowRate(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg)
		l := New(instances(t, dialect, 1)[0], "crm", config.RateLimit{PerSecond: 5, Burst: 1}, Options{Metrics: m})
		const calls = 10
		for range calls {
			done, err := l.Wait(context.Background())
			require.NoError(t, err)
			done(nil)
		}
		require.Equal(t, 1, testutil.CollectAndCount(m.waited), "one series, for the service")
		h := histogramOf(t, reg, "syncdesk_rate_limit_wait_seconds")
		require.Equal(t, uint64(calls), h.GetSampleCount(), "a sample per call")
		require.InDelta(t, 1.8, h.GetSampleSum(), 0.5, "the time the calls waited in all")
	})
}

// Without a limit to keep, calls are counted and wait nothing.
func TestUnlimitedCallsWaitNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := New(instances(t, "sqlite", 1)[0], "crm", config.RateLimit{}, Options{Metrics: NewMetrics(reg)})
	start := time.Now()
	for range 5 {
		done, err := l.Wait(context.Background())
		require.NoError(t, err)
		done(nil)
	}
	h := histogramOf(t, reg, "syncdesk_rate_limit_wait_seconds")
	require.Equal(t, uint64(5), h.GetSampleCount())
	require.LessOrEqual(t, h.GetSampleSum(), time.Since(start).Seconds())
	require.Less(t, h.GetSampleSum(), 0.5)
}

func histogramOf(t *testing.T, reg *prometheus.Registry, name string) *dto.Histogram {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			require.Len(t, f.GetMetric(), 1)
			return f.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatalf("%s is not registered", name)
	return nil
}
