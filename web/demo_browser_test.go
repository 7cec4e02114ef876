package web

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
	"github.com/syncdesk/syncdesk/sync/schedule"
	"github.com/syncdesk/syncdesk/sync/services"
	"github.com/syncdesk/syncdesk/views"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// The demo as `go run .` shows it — both sandboxes with faults on, the
// seeded records, webhooks coming back — and every main page opened in a
// real browser. With SYNCDESK_SCREENSHOTS set, this makes the README's pictures.
func TestBrowserTheDemoPages(t *testing.T) {
	browsertest.Parallel(t)
	d := startDemo(t, false)
	_, err := models.CreateUser(d.db, "ana@example.com", models.RoleOperator, testPassword, time.Now())
	require.NoError(t, err)
	bctx := browsertest.New(t)
	signInBrowser(t, bctx, d.srv.URL, "ana@example.com")
	srv, run, failed := d.srv, d.run, d.failed
	for _, page := range []struct{ name, path, want string }{
		{"overview", "/", `[data-testid="reconcile-crm"] a[href="/reconcile/` + itoa(run.ID) + `"]`},
		{"links", "/links", `[data-testid="links-table"]`},
		{"failed", "/failed", `[data-testid="failed-groups"]`},
		{"link", views.LinkURL(failed.ID), `[data-testid="attempts"]`},
		{"events", "/events", "main table"},
		{"services", "/services", "main"},
	} {
		require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(srv.URL+page.path), chromedp.WaitVisible(page.want)), page.path)
		browsertest.Screenshot(bctx, t, "demo-"+page.name)
	}
}

// demoDesk is the demo after a few rounds: what startDemo leaves.
type demoDesk struct {
	srv    *httptest.Server
	db     *gorm.DB
	run    *models.ReconciliationRun // the crm reconciliation, completed
	failed models.Link               // the first failed link
}

// startDemo serves the demo as `go run .` does, with testScheduler's tasks
// on the schedules page if scheduled, and lets it run a few rounds of sends,
// retries, webhooks and a reconciliation of each service.
func startDemo(t *testing.T, scheduled bool) *demoDesk {
	t.Helper()
	db := dbtest.SQLite(t)
	var sched *schedule.Scheduler
	if scheduled {
		sched, _ = testScheduler(t, db)
	}
	demo, svcs, err := sandbox.StartDemo()
	require.NoError(t, err)
	t.Cleanup(func() { demo.Close(context.Background()) })
	cfg := config.Default()
	cfg.Services = svcs
	clk := clock.Real{}
	log := slog.New(slog.DiscardHandler)
	r := redact.New(nil)
	var outs []outbox.Service
	var recs []reconcile.Service
	for _, name := range cfg.ServiceNames() {
		conn := connector.NewHTTP(name, svcs[name], r, nil)
		outs = append(outs, outbox.Service{Name: name, Config: svcs[name], Conn: conn})
		recs = append(recs, reconcile.Service{Name: name, Config: svcs[name], Conn: conn})
	}
	eng := outbox.New(db, outs, clk, log, outbox.Options{})
	rc, err := inbox.New(db, svcs, clk, log, r)
	require.NoError(t, err)
	rec := reconcile.New(db, recs, clk, log, reconcile.Options{})
	t.Cleanup(rec.Close)
	s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Log: log, Version: "demo", Redactor: r, Outbox: eng, Inbox: rc,
		Reconciler: rec, Pauser: services.NewPauser(db, cfg.ServiceNames(), clk, log), Scheduler: sched})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	require.NoError(t, demo.StartWebhooks(srv.URL))

	for _, rec := range sandbox.DemoRecords() {
		_, err := eng.Upsert(context.Background(), rec.Type, rec.ID, []byte(rec.Payload))
		require.NoError(t, err)
	}
	ctx, stop := context.WithTimeout(context.Background(), 12*time.Second)
	_ = eng.Run(ctx, time.Second) // a few rounds of sends, retries and webhooks
	stop()
	run, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{TriggeredBy: "scheduler"})
	require.NoError(t, err)
	require.Equal(t, models.RunCompleted, run.Status, run.Error)
	// The payments' status is the provider's, set on our records by its
	// webhooks: reconciliation must not take it for a difference to push.
	pay, err := rec.Run(context.Background(), "payments", reconcile.RunOptions{TriggeredBy: "scheduler", DryRun: true})
	require.NoError(t, err)
	var mismatched []string
	require.NoError(t, db.Model(&models.Discrepancy{}).Where("run_id = ? AND kind = ?", pay.ID, discrepancy.FieldMismatch).
		Pluck("detail", &mismatched).Error)
	require.Empty(t, mismatched, "a demo payment differs from the provider's only in fields the provider owns")
	require.NoError(t, models.RefreshStats(db, clk.Now()))
	var failed models.Link
	require.NoError(t, db.Where("status = ?", models.StatusFailed).Order("id").First(&failed).Error, "the demo shows failures")
	return &demoDesk{srv: srv, db: db, run: run, failed: failed}
}
