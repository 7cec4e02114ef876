package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

func TestMetricsBehindTheirOwnToken(t *testing.T) {
	b := setupSQLite(t)
	reg := prometheus.NewRegistry()
	svc := b.cfg.Services["crm"]
	eng := outbox.New(b.db, []outbox.Service{{Name: "crm", Config: svc, Conn: connector.NewHTTP("crm", svc, redact.New(nil), nil)}},
		b.clock, slog.New(slog.DiscardHandler), outbox.Options{Registry: reg})
	_, err := eng.Upsert(context.Background(), "order", "1", []byte(`{"title":"Order 1"}`))
	require.NoError(t, err)
	require.NoError(t, eng.Drain(context.Background()))
	require.NoError(t, models.RefreshStats(b.db, b.clock.Now())) // syncdesk_links reads the aggregate

	t.Setenv("TEST_METRICS_TOKEN", "scrape-me-please")
	cfg := b.cfg
	cfg.Metrics.Access, cfg.Metrics.Token = "token", "${TEST_METRICS_TOKEN}"
	s, err := New(Deps{DB: b.db, Config: cfg, Clock: b.clock, Log: slog.New(slog.DiscardHandler), Outbox: eng, Metrics: reg})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	res, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)

	b.srv = srv
	r := b.client().do(http.MethodGet, "/metrics", nil, http.Header{"Authorization": {"Bearer scrape-me-please"}})
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.body, `syncdesk_attempts_total{outcome="ok",service="crm"} 1`)
	require.Contains(t, r.body, `syncdesk_links{service="crm",status="success"} 1`)
}

// Closed (the default), /metrics is not there, for everyone alike: a 404,
// not the login page a scraper would read as a broken target.
func TestClosedMetricsAreNotFound(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	cfg := b.cfg
	cfg.Metrics.Access = "closed"
	s, err := New(Deps{DB: b.db, Config: cfg, Clock: b.clock, Log: slog.New(slog.DiscardHandler), Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	b.srv = srv

	anonymous := b.client()
	signedIn := b.signedIn("ana@example.com", models.RoleAdmin)
	for name, c := range map[string]*client{"anonymous": anonymous, "signed in": signedIn} {
		r := c.get("/metrics")
		require.Equal(t, http.StatusNotFound, r.status, "%s: %s", name, r.header.Get("Location"))
		require.Contains(t, r.body, "There is no page at this address.", name)
		require.NotContains(t, r.body, "# TYPE", name)
	}
	// Open but without a registry to serve, it is not there either.
	cfg.Metrics.Access = "open"
	s, err = New(Deps{DB: b.db, Config: cfg, Clock: b.clock, Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	bare := httptest.NewServer(s.Handler())
	defer bare.Close()
	b.srv = bare
	require.Equal(t, http.StatusNotFound, anonymous.get("/metrics").status)
}
