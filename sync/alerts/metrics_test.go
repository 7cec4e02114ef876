package alerts

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
)

func TestIncidentsOpenIsAGaugeByRule(t *testing.T) {
	b := setup(t, dbtest.SQLite(t), config.Alerts{})
	reg := prometheus.NewRegistry()
	require.NoError(t, b.a.RegisterMetrics(reg))
	openPause(t, b)
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, 1)
	require.Equal(t, "syncdesk_incidents_open", families[0].GetName())
	got := map[string]float64{}
	for _, m := range families[0].GetMetric() {
		got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	require.Equal(t, map[string]float64{ServicePaused: 1, FailedLinks: 0, StuckQueue: 0, RefusedWebhooks: 0,
		ReconcileWaiting: 0, TaskFailing: 0}, got)
}
