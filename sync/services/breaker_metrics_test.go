package services_test

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/services"
)

// The breaker gauge flips to 1 when a service's breaker opens, on an
// instance other than the one that opened it too, and back to 0 when the
// provider's recovery closes it.
func TestBreakerGaugeFlipsWhenAServicePausesItself(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		b := services.NewBreakers(e.db, map[string]config.Breaker{"crm": testBreaker, "payments": testBreaker}, e.pauser, e.clock,
			slog.New(slog.DiscardHandler), services.BreakerOptions{At: e.clock.Now})
		e.eng.SetBreaker(b)
		other := services.NewBreakers(e.db, map[string]config.Breaker{"crm": testBreaker, "payments": testBreaker},
			services.NewPauser(db, []string{"crm", "payments"}, e.clock, slog.New(slog.DiscardHandler)), e.clock,
			slog.New(slog.DiscardHandler), services.BreakerOptions{At: e.clock.Now})
		gauge := func(bs *services.Breakers) map[string]float64 {
			reg := prometheus.NewRegistry()
			reg.MustRegister(bs.Metrics())
			return map[string]float64{"crm": gaugeOf(t, reg, "crm"), "payments": gaugeOf(t, reg, "payments")}
		}
		require.Equal(t, map[string]float64{"crm": 0, "payments": 0}, gauge(b), "no call yet: closed")

		e.down(503)
		e.feed(1, 20)
		e.drain(e.eng)
		require.NotNil(t, e.pause("crm"), "precondition: the CRM paused itself")
		require.Equal(t, map[string]float64{"crm": 1, "payments": 0}, gauge(b))
		require.Equal(t, map[string]float64{"crm": 1, "payments": 0}, gauge(other), "the state is shared")

		e.down(0)
		e.clock.Advance(testBreaker.ProbeEvery)
		e.settleAll(e.eng)
		require.Nil(t, e.pause("crm"), "precondition: the probe resumed the CRM")
		require.Equal(t, map[string]float64{"crm": 0, "payments": 0}, gauge(b))
	})
}

// gaugeOf is the service's value of syncdesk_breaker_open in reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry, service string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "syncdesk_breaker_open" && m.GetLabel()[0].GetValue() == service {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no syncdesk_breaker_open for %s", service)
	return 0
}
