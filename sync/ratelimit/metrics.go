package ratelimit

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the limiters' Prometheus series, one set for every service's
// limiter of the process.
type Metrics struct {
	waited *prometheus.HistogramVec
}

// NewMetrics registers the limiters' series with reg; nil reg keeps them
// unregistered.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{waited: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "syncdesk_rate_limit_wait_seconds",
		Help: "How long each call to a service waited for its turn under the service's rate limit (and its bound on " +
			"calls in flight) before it went; most wait 0 while the provider's limit is far.",
		Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"service"})}
	if reg != nil {
		reg.MustRegister(m.waited)
	}
	return m
}

// observe counts one call's wait; a nil Metrics counts nothing.
func (m *Metrics) observe(service string, d time.Duration) {
	if m == nil {
		return
	}
	m.waited.WithLabelValues(service).Observe(max(d, 0).Seconds())
}
