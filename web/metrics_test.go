package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/ratelimit"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/services"
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

// After a run of sends, /metrics shows each claim's lag, each call's wait
// under the rate limit, and the service's breaker, closed.
func TestMetricsShowClaimLagWaitsAndBreakers(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	reg := prometheus.NewRegistry()
	svc := b.cfg.Services["crm"]
	gate := ratelimit.New(b.db, "crm", config.RateLimit{PerSecond: 50, Burst: 1}, ratelimit.Options{Metrics: ratelimit.NewMetrics(reg)})
	eng := outbox.New(b.db, []outbox.Service{{Name: "crm", Config: svc, Conn: connector.NewHTTP("crm", svc, redact.New(nil), nil).WithGate(gate)}},
		b.clock, slog.New(slog.DiscardHandler), outbox.Options{Registry: reg})
	pauser := services.NewPauser(b.db, []string{"crm"}, b.clock, slog.New(slog.DiscardHandler))
	breakers := services.NewBreakers(b.db, map[string]config.Breaker{"crm": config.DefaultBreaker}, pauser, b.clock,
		slog.New(slog.DiscardHandler), services.BreakerOptions{})
	eng.SetBreaker(breakers)
	reg.MustRegister(breakers.Metrics())
	for i := range 5 {
		_, err := eng.Upsert(context.Background(), "order", strconv.Itoa(i), []byte(`{"title":"Order"}`))
		require.NoError(t, err)
	}
	b.clock.Advance(3 * time.Second)
	require.NoError(t, eng.Drain(context.Background()))

	cfg := b.cfg
	cfg.Metrics.Access = "open"
	s, err := New(Deps{DB: b.db, Config: cfg, Clock: b.clock, Log: slog.New(slog.DiscardHandler), Outbox: eng, Metrics: reg})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	b.srv = srv
	r := b.client().get("/metrics")
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.body, "syncdesk_claim_lag_seconds_count 5", "a sample per claimed link")
	require.Contains(t, r.body, "syncdesk_claim_lag_seconds_sum 15", "each was claimed 3 s after it fell due")
	require.Contains(t, r.body, `syncdesk_rate_limit_wait_seconds_count{service="crm"} 5`, "a sample per call")
	require.Contains(t, r.body, `syncdesk_breaker_open{service="crm"} 0`)
}
