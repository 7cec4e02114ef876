package alerts

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// RegisterMetrics adds syncdesk_incidents_open to reg.
func (a *Alerts) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(incidentsCollector{db: a.db})
}

// incidentsCollector reports the open incidents by rule, read at each
// scrape: a handful of rows, by the partial unique index of open ones.
type incidentsCollector struct{ db *gorm.DB }

var incidentsDesc = prometheus.NewDesc("syncdesk_incidents_open",
	"Incidents open now, by alert rule (every rule, 0 when none).", []string{"rule"}, nil)

func (c incidentsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- incidentsDesc }

func (c incidentsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := models.CountOpenIncidents(c.db.WithContext(ctx))
	if err != nil {
		ch <- prometheus.NewInvalidMetric(incidentsDesc, err)
		return
	}
	for _, rule := range Rules {
		ch <- prometheus.MustNewConstMetric(incidentsDesc, prometheus.GaugeValue, float64(counts[rule]), rule)
	}
}
