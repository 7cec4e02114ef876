package web

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/source"
)

// sourcePassword is in both sources' DSNs: it may never reach a page.
const sourcePassword = "src-pass-Qw7eR9xx"

// setupSources serves syncdesk with two sources: shop, an outbox table on
// the test Postgres that has been read once (three rows), and legacy,
// whose database cannot be reached, so that it is failing.
func setupSources(t *testing.T, db *gorm.DB) *bundle {
	t.Helper()
	u, err := url.Parse(dbtest.PostgresURL(t))
	require.NoError(t, err)
	biz, err := sql.Open("pgx", u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = biz.Close() })
	_, err = biz.Exec(`CREATE TABLE syncdesk_outbox (id BIGSERIAL PRIMARY KEY, type TEXT NOT NULL, local_id TEXT NOT NULL, payload JSONB, op TEXT)`)
	require.NoError(t, err)
	for i := range 3 {
		_, err = biz.Exec(`INSERT INTO syncdesk_outbox (type, local_id, payload) VALUES ('order', $1, '{"total": 1}')`, fmt.Sprint(i))
		require.NoError(t, err)
	}
	u.User = url.UserPassword(u.User.Username(), sourcePassword) // the test server trusts loopback: any password does
	t.Setenv("SYNCDESK_TEST_SHOP_DSN", u.String())
	cfg := config.Default()
	cfg.TrustedProxies = []string{"127.0.0.0/8"}
	cfg.Services = map[string]config.Service{"crm": {BaseURL: "http://127.0.0.1:1", Objects: map[string]config.Object{
		"order": {Create: "POST /deals", Update: "PUT /deals/{external_id}"}}}}
	cfg.Sources = map[string]config.Source{
		"shop":   {Driver: "postgres", DSN: "${SYNCDESK_TEST_SHOP_DSN}", Table: "syncdesk_outbox"},
		"legacy": {Driver: "mysql", DSN: "erp:" + sourcePassword + "@tcp(127.0.0.1:1)/erp?timeout=2s", Table: "outbox"},
	}
	require.NoError(t, cfg.Complete())
	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	eng := outbox.New(db, []outbox.Service{{Name: "crm", Config: cfg.Services["crm"]}}, clk, log, outbox.Options{})
	set, err := source.Open(context.Background(), cfg, db, eng, source.Options{Clock: clk, Log: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = set.Close() })
	for _, task := range set.Tasks() {
		_ = task.Run(context.Background()) // legacy fails, and says so on its row
	}
	s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Version: "test", Log: log, Outbox: eng, Sources: set})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &bundle{t: t, db: db, clock: clk, srv: srv, cfg: cfg, eng: eng, web: s}
}

func TestSourcesOnTheServicesPage(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupSources(t, db)
		// The cursor of a source taken out of the configuration (renamed
		// to read a new table from its start) is kept, and not shown.
		require.NoError(t, models.EnsureSourceCursor(db, "old-shop"))
		_, err := models.SetSourceUntimed(db, "shop", 2)
		require.NoError(t, err)
		b.clock.Advance(time.Minute)
		r := b.signedIn("root@example.com", models.RoleAdmin).get("/services")
		require.Equal(t, http.StatusOK, r.status, r.body)
		shop := between(t, r.body, `data-testid="source-shop"`, "</section>")
		require.Contains(t, shop, "Reading")
		require.Contains(t, shop, "outbox table syncdesk_outbox")
		require.Contains(t, shop, "postgres 127.0.0.1:5432/test")
		require.Regexp(t, `data-testid="source-rows-shop">3; last read 1 min`, shop)
		require.Contains(t, shop, "after id 3")
		require.Contains(t, shop, "1 min 0 s behind", "a minute since it last had nothing waiting")
		require.Contains(t, shop, `data-testid="source-untimed-shop">2: their updated_at is empty`)
		require.NotContains(t, between(t, r.body, `data-testid="source-legacy"`, "</section>"), "Rows left out")
		legacy := between(t, r.body, `data-testid="source-legacy"`, "</section>")
		require.Contains(t, legacy, "Failing")
		require.Contains(t, legacy, `data-testid="source-error-legacy"`)
		require.Contains(t, legacy, "127.0.0.1:1", "the error says what failed")
		require.NotContains(t, r.body, "old-shop", "a source no longer configured has no card")
		require.NotContains(t, r.body, sourcePassword, "a DSN's password reached the page")
		require.NotContains(t, r.body, "SYNCDESK_TEST_SHOP_DSN")
	})
}

// An operator pauses a source and resumes it from the page, each audited;
// a viewer has no switch and is refused.
func TestSourcePauseAndResumeFromThePage(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupSources(t, db)
		viewer := b.signedIn("vi@example.com", models.RoleViewer)
		require.NotContains(t, viewer.get("/services").body, `action="/sources/shop/pause"`)
		require.Equal(t, http.StatusForbidden, viewer.post("/services", "/sources/shop/pause", nil).status)

		op := b.signedIn("op@example.com", models.RoleOperator)
		r := op.post("/services", "/sources/shop/pause", url.Values{"reason": {"shop database upgrade"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, "/services?done=source-paused", r.header.Get("Location"))
		page := op.get("/services").body
		shop := between(t, page, `data-testid="source-shop"`, "</section>")
		require.Contains(t, shop, "Paused")
		require.Contains(t, shop, "by op@example.com: “shop database upgrade”.")
		require.Contains(t, shop, `action="/sources/shop/resume"`)
		require.EqualValues(t, 1, b.auditCount(action.SourcePause, string(models.OutcomeSuccess)))
		c, err := models.GetSourceCursor(db, "shop")
		require.NoError(t, err)
		require.True(t, c.Paused())

		r = op.post("/services", "/sources/shop/resume", nil)
		require.Equal(t, "/services?done=source-resumed", r.header.Get("Location"))
		require.EqualValues(t, 1, b.auditCount(action.SourceResume, string(models.OutcomeSuccess)))
		r = op.post("/services", "/sources/shop/resume", nil)
		require.Equal(t, "/services?done=source-not-paused", r.header.Get("Location"))
		require.Equal(t, http.StatusNotFound, op.post("/services", "/sources/nosuch/pause", nil).status)
	})
}
