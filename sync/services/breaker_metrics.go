package services

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncdesk/syncdesk/models"
)

var breakerDesc = prometheus.NewDesc("syncdesk_breaker_open",
	"Whether a service's circuit breaker is open (1: paused automatically, probed once per interval) or closed (0), "+
		"as all instances share it.", []string{"service"}, nil)

// Metrics is the breakers' Prometheus collector: one gauge per service
// whose breaker is on, read from the shared row at each scrape, so that
// every instance reports the breaker another one opened.
func (b *Breakers) Metrics() prometheus.Collector { return breakerCollector{b} }

type breakerCollector struct{ b *Breakers }

func (c breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerDesc }

func (c breakerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	states, err := models.BreakerStates(c.b.db.WithContext(ctx))
	if err != nil {
		ch <- prometheus.NewInvalidMetric(breakerDesc, err)
		return
	}
	for name := range c.b.svc {
		open := 0.0
		if states[name] == "open" {
			open = 1
		}
		ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, open, name)
	}
}
