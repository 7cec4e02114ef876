package outbox

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// metrics are the engine's Prometheus series.
type metrics struct {
	attempts *prometheus.CounterVec
	claimLag prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, db *gorm.DB) *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "syncdesk_attempts_total",
			Help: "Outgoing calls by service and outcome (ok, temporary, permanent, ambiguous)."}, []string{"service", "outcome"}),
		claimLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "syncdesk_claim_lag_seconds",
			Help:    "How late a link was claimed after it became due.",
			Buckets: []float64{.01, .05, .1, .5, 1, 2, 5, 10, 30, 60, 300}}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.claimLag, linksCollector{db: db})
	}
	return m
}

// observe counts a written batch's attempts.
func (e *Engine) observe(batch []models.LinkOutcome) {
	for _, o := range batch {
		for _, a := range o.Calls {
			e.metrics.attempts.WithLabelValues(o.Link.ExternalService, string(a.Outcome)).Inc()
		}
	}
}

// observeClaim records how late each claimed link was.
func (e *Engine) observeClaim(links []models.ClaimedLink, now time.Time) {
	for _, l := range links {
		e.metrics.claimLag.Observe(max(now.Sub(l.Link.NextAttemptAt), 0).Seconds())
	}
}

// linksCollector reports links by service and status as the refresh-stats
// task last counted them: a scrape every few seconds must not count every
// link (tens of milliseconds at a million).
type linksCollector struct{ db *gorm.DB }

var linksDesc = prometheus.NewDesc("syncdesk_links",
	"Links by service and status, as last counted (the refresh-stats task, every 10 s).", []string{"service", "status"}, nil)

func (c linksCollector) Describe(ch chan<- *prometheus.Desc) { ch <- linksDesc }

func (c linksCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := models.LinkCounts(c.db.WithContext(ctx))
	if err != nil {
		ch <- prometheus.NewInvalidMetric(linksDesc, err)
		return
	}
	for _, sc := range counts {
		ch <- prometheus.MustNewConstMetric(linksDesc, prometheus.GaugeValue, float64(sc.N), sc.Service, sc.Status)
	}
}
