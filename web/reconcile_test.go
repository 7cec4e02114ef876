package web

import (
	"context"
	"encoding/csv"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// reconcileServer serves syncdesk like setup does, with the CRM's orders
// listable and a reconciler over it; maxFixes sets the safety valve.
func reconcileServer(t *testing.T, db *gorm.DB, maxFixes int) (*bundle, *reconcile.Reconciler) {
	t.Helper()
	b := setup(t, db)
	svc := b.cfg.Services["crm"]
	svc.Objects = maps.Clone(svc.Objects)
	o := svc.Objects["order"]
	o.List = "GET /deals?cursor={cursor}"
	svc.Objects["order"] = o
	svc.Reconcile.MaxFixes = maxFixes
	b.cfg.Services = map[string]config.Service{"crm": svc}
	log := slog.New(slog.DiscardHandler)
	rec := reconcile.New(db, []reconcile.Service{{Name: "crm", Config: svc, Conn: connector.NewHTTP("crm", svc, redact.New(nil), nil)}},
		b.clock, log, reconcile.Options{WorkerID: "test"})
	t.Cleanup(rec.Close)
	s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Version: "test", Log: log, Outbox: b.eng, Reconciler: rec})
	require.NoError(t, err)
	require.NoError(t, addReconcileRoutes(s))
	b.srv = httptest.NewServer(s.Handler())
	t.Cleanup(b.srv.Close)
	return b, rec
}

// addReconcileRoutes registers this feature's routes as routes.go does,
// unless routes.go already has them.
func addReconcileRoutes(s *Server) error {
	csrf := s.sessionCSRF
	have := map[string]bool{}
	for _, r := range s.echo.Routes() {
		have[r.Method+" "+r.Path] = true
	}
	add := func(method, path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
		if !have[method+" "+path] {
			s.echo.Add(method, path, h, append([]echo.MiddlewareFunc{s.requireUser, csrf, noStore}, mw...)...)
		}
	}
	operator := s.requireRole(models.RoleOperator)
	add(http.MethodGet, "/reconcile", s.listRuns)
	add(http.MethodPost, "/reconcile/start", s.startRun, operator, s.reconciling)
	add(http.MethodGet, "/reconcile/:id", s.showRun)
	add(http.MethodGet, "/reconcile/:id/progress", s.runProgressFragment)
	add(http.MethodGet, "/reconcile/:id/discrepancies.csv", s.exportDiscrepancies)
	add(http.MethodPost, "/reconcile/:id/confirm", s.confirmRun, operator, s.reconciling)
	add(http.MethodPost, "/reconcile/:id/cancel", s.cancelRun, operator, s.reconciling)
	return nil
}

// seedOrders sends orders from..to to the CRM through the outbox.
func (b *bundle) seedOrders(from, to int) {
	b.t.Helper()
	for n := from; n <= to; n++ {
		_, err := b.eng.Upsert(context.Background(), "order", fmt.Sprint(n), []byte(fmt.Sprintf(`{"title":"Order %d"}`, n)))
		require.NoError(b.t, err)
	}
	require.NoError(b.t, b.eng.Drain(context.Background()))
}

// orphanRecord stores an order with no link: never synced.
func (b *bundle) orphanRecord(n int) {
	b.t.Helper()
	canonical, hash, err := models.CanonicalPayload([]byte(fmt.Sprintf(`{"title":"Order %d"}`, n)))
	require.NoError(b.t, err)
	_, err = models.UpsertRecord(b.db, "order", fmt.Sprint(n), canonical, hash, b.clock.Now())
	require.NoError(b.t, err)
}

// deleteRemote deletes order n's deal in the CRM: missing_remote.
func (b *bundle) deleteRemote(n int) {
	b.t.Helper()
	for _, o := range b.crm.Objects() {
		if o["external_key"] == fmt.Sprintf("site_order_%d", n) {
			require.True(b.t, b.crm.Delete(o["id"].(string)))
			return
		}
	}
	b.t.Fatalf("no deal for order %d", n)
}

// waitRunEnd waits until run id is no longer running and returns it.
func (b *bundle) waitRunEnd(id int64) *models.ReconciliationRun {
	b.t.Helper()
	var r *models.ReconciliationRun
	require.Eventually(b.t, func() bool {
		var err error
		r, err = models.RunByID(b.db, id)
		return err == nil && r.Status != models.RunRunning
	}, 20*time.Second, 20*time.Millisecond, "run %d never ended", id)
	return r
}

func runIDFrom(t *testing.T, location string) int64 {
	t.Helper()
	var id int64
	_, err := fmt.Sscanf(location, "/reconcile/%d", &id)
	require.NoError(t, err, "redirect to %q", location)
	return id
}

// An operator starts a run (audited) and sees it in the list; the run
// page shows what it found.
func TestReconcileStartAndList(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		b.seedOrders(1, 4)
		b.deleteRemote(2)
		b.orphanRecord(9)
		b.clock.Advance(time.Second) // a run leaves alone what changed in its very second
		op := b.signedIn("ops@example.com", models.RoleOperator)

		r := op.get("/reconcile")
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, `data-testid="runs-empty"`)
		require.Contains(t, r.body, `data-testid="start-run"`)

		r = op.post("/reconcile", "/reconcile/start", url.Values{"service": {"crm"}, "dry_run": {"1"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		id := runIDFrom(t, r.header.Get("Location"))
		run := b.waitRunEnd(id)
		require.Equal(t, models.RunCompleted, run.Status, run.Error)
		require.True(t, run.DryRun)
		require.EqualValues(t, 1, b.auditCount("reconcile.start", models.OutcomeSuccess))

		r = op.get("/reconcile")
		require.Contains(t, r.body, fmt.Sprintf(`data-testid="run-row-%d"`, id))
		require.Contains(t, r.body, "Completed")
		require.Contains(t, r.body, "Missing at the provider")
		require.Contains(t, r.body, "Never sent")
		require.Contains(t, op.get("/reconcile?service=other").body, "No runs of other yet")

		r = op.get(fmt.Sprintf("/reconcile/%d", id))
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, "We have a synced link, but the provider no longer has the object")
		require.Contains(t, r.body, "Dry run")
		require.Contains(t, r.body, `href="/records/order/9"`)
		require.NotContains(t, r.body, `hx-trigger=`, "an ended run does not poll")

		p := op.get(fmt.Sprintf("/reconcile/%d/progress", id))
		require.Equal(t, "true", p.header.Get("HX-Refresh"), "an ended run's fragment reloads the page")
		require.Contains(t, p.body, "See the report")
	})
}

// The overview shows each reconcilable service's newest run: what it
// found, what it fixed and what needs a person; before any run, it says so.
func TestOverviewSummarisesTheNewestRun(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		v := b.signedIn("vic@example.com", models.RoleViewer)
		r := v.get("/")
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, `data-testid="reconcile-summary"`)
		require.Contains(t, r.body, "Never reconciled")

		older := seedRun(t, db, b.clock.Now(), 2)
		newer := seedRun(t, db, b.clock.Now().Add(time.Minute), 5) // 3 fixed, 2 reported
		r = v.get("/")
		row := between(t, r.body, `data-testid="reconcile-crm"`, "</tr>")
		require.Contains(t, row, fmt.Sprintf(`href="/reconcile/%d"`, newer))
		require.NotContains(t, row, fmt.Sprintf(`href="/reconcile/%d"`, older))
		require.NotContains(t, row, "Never reconciled")
		require.Contains(t, row, "Completed")
		require.Regexp(t, `Missing at the provider <strong>3</strong>`, row)
		require.Regexp(t, `Duplicated at the provider <strong>2</strong>`, row)
		require.Equal(t, map[string]string{"fixed": "3", "reported": "2", "open": "0", "resolved": "0"}, statusCounts(row))
	})
}

// between is the part of s from the first from up to the next to.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	require.GreaterOrEqual(t, i, 0, "%q not found", from)
	j := strings.Index(s[i:], to)
	require.GreaterOrEqual(t, j, 0, "%q not found after %q", to, from)
	return s[i : i+j]
}

// A viewer sees no start, confirm or cancel buttons, and a forged POST is
// refused with 403 and audited.
func TestReconcileViewerCannotAct(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rec := reconcileServer(t, db, 1)
		b.orphanRecord(1)
		b.orphanRecord(2)
		run, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{TriggeredBy: "test"})
		require.NoError(t, err)
		require.Equal(t, models.RunAwaiting, run.Status)

		v := b.signedIn("vic@example.com", models.RoleViewer)
		r := v.get("/reconcile")
		require.Equal(t, http.StatusOK, r.status)
		require.NotContains(t, r.body, `data-testid="start-run"`)
		r = v.get(fmt.Sprintf("/reconcile/%d", run.ID))
		require.Contains(t, r.body, "safety valve")
		require.NotContains(t, r.body, `data-testid="run-confirm"`)
		require.NotContains(t, r.body, `data-testid="run-cancel"`)

		for _, path := range []string{"/reconcile/start", fmt.Sprintf("/reconcile/%d/confirm", run.ID), fmt.Sprintf("/reconcile/%d/cancel", run.ID)} {
			r = v.post("/reconcile", path, url.Values{"service": {"crm"}})
			require.Equal(t, http.StatusForbidden, r.status, path)
		}
		require.EqualValues(t, 3, b.auditCount("access.denied", models.OutcomeDenied))
		again, err := models.RunByID(db, run.ID)
		require.NoError(t, err)
		require.Equal(t, models.RunAwaiting, again.Status, "nothing was confirmed")
	})
}

var discNext = regexp.MustCompile(`href="([^"]+)" class="btn" data-testid="disc-next"`)

// seedRun stores a finished run with n discrepancies: even ones missing_remote
// and fixed, odd ones duplicate_remote and reported.
func seedRun(t *testing.T, db *gorm.DB, now time.Time, n int) int64 {
	t.Helper()
	fin, began := now, now.Add(-3*time.Second) // ended now: a run does not end in the future
	run := models.ReconciliationRun{Service: "crm", TriggeredBy: "test", StartedAt: began, HeartbeatAt: &began}
	require.NoError(t, models.StartRun(db, &run))
	require.NoError(t, db.Model(&run).Updates(map[string]any{"status": models.RunCompleted, "finished_at": fin,
		"scanned": n, "expected": n}).Error)
	for i := range n {
		d := models.Discrepancy{RunID: run.ID, Kind: discrepancy.MissingRemote, Status: models.DiscrepancyFixed,
			LocalType: "order", LocalID: fmt.Sprint(i), ExternalKey: fmt.Sprintf("site_order_%d", i), Detail: "gone", CreatedAt: now}
		if i%2 == 1 {
			d.Kind, d.Status, d.ExternalIDs = discrepancy.DuplicateRemote, models.DiscrepancyReported, fmt.Sprintf("deal_%da,deal_%db", i, i)
		}
		require.NoError(t, db.Create(&d).Error)
	}
	return run.ID
}

// The run page filters discrepancies by kind and status, pages through
// them, and the CSV carries the same filters.
func TestReconcileRunPageFiltersPagesAndExports(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		id := seedRun(t, db, b.clock.Now(), 230)
		v := b.signedIn("vic@example.com", models.RoleViewer)
		page := fmt.Sprintf("/reconcile/%d", id)

		r := v.get(page)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, discrepanciesPageSize, strings.Count(r.body, `data-testid="disc-row-`))
		require.Contains(t, r.body, `data-testid="kind-missing_remote"`)
		require.Contains(t, r.body, "deal_1a")
		require.Contains(t, r.body, "deal_1b", "every remote id of a duplicate shows")
		require.Contains(t, r.body, "3 s", "the duration")

		r = v.get(page + "?kind=duplicate_remote&status=reported")
		require.Equal(t, discrepanciesPageSize, strings.Count(r.body, `data-kind="duplicate_remote"`))
		require.NotContains(t, r.body, `data-kind="missing_remote"`)
		next := discNext.FindStringSubmatch(r.body)
		require.NotNil(t, next, "a next page link")
		r = v.get(strings.ReplaceAll(next[1], "&amp;", "&"))
		require.Equal(t, 15, strings.Count(r.body, `data-kind="duplicate_remote"`), "115 in all, 100 on the first page")
		require.NotContains(t, r.body, `data-testid="disc-next"`)

		require.Contains(t, v.get(page+"?kind=never_synced").body, "No discrepancies match these filters")
		require.Equal(t, http.StatusBadRequest, v.get(page+"?kind=bogus").status)
		require.Equal(t, http.StatusNotFound, v.get("/reconcile/999999").status)

		r = v.get(page + "/discrepancies.csv?kind=duplicate_remote")
		require.Equal(t, http.StatusOK, r.status)
		require.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "text/csv"))
		require.Equal(t, fmt.Sprintf(`attachment; filename="reconcile-crm-run-%d.csv"`, id), r.header.Get("Content-Disposition"))
		rows, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
		require.NoError(t, err)
		require.Equal(t, discrepancyCSVHeader, rows[0])
		require.Len(t, rows, 116)
		require.Equal(t, "Duplicated at the provider", rows[1][3], "the page's words")
		require.Equal(t, "Waiting for a person", rows[1][4], "the page's words, not reported")
		require.Equal(t, "crm", rows[1][2], "the service")
		require.Equal(t, "duplicate_remote", rows[1][18], "the code last, for a script")
		require.Equal(t, "deal_1a, deal_1b", rows[1][8])
		all, err := csv.NewReader(strings.NewReader(v.get(page + "/discrepancies.csv").body)).ReadAll()
		require.NoError(t, err)
		require.Len(t, all, 231)
	})
}

// A run stopped at the safety valve shows Confirm; confirming applies the
// rest of the fixes, and is audited.
func TestReconcileConfirmAppliesFixes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rec := reconcileServer(t, db, 2)
		for n := 1; n <= 5; n++ {
			b.orphanRecord(n)
		}
		run, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{TriggeredBy: "scheduler"})
		require.NoError(t, err)
		require.Equal(t, models.RunAwaiting, run.Status)
		op := b.signedIn("ops@example.com", models.RoleOperator)
		page := fmt.Sprintf("/reconcile/%d", run.ID)
		r := op.get(page)
		require.Contains(t, r.body, `data-testid="run-confirm"`)
		require.Contains(t, r.body, "Awaiting confirmation")
		require.Contains(t, r.body, "Confirm fixes (3 more)")

		r = op.post(page, page+"/confirm", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.EqualValues(t, 1, b.auditCount("reconcile.confirm", models.OutcomeSuccess))
		d, err := models.RunDetailByID(db, run.ID)
		require.NoError(t, err)
		require.Equal(t, models.RunCompleted, d.Run.Status)
		require.Equal(t, models.KindCount{Fixed: 5, Total: 5}, d.All)
		r = op.get(page)
		require.Contains(t, r.body, "by ops@example.com")
		require.NotContains(t, r.body, `data-testid="run-confirm"`)

		r = op.post(page, page+"/confirm", nil)
		require.Equal(t, http.StatusBadRequest, r.status, "a completed run cannot be confirmed again")
		require.EqualValues(t, 1, b.auditCount("reconcile.confirm", models.OutcomeDenied))
	})
}

// A start while a run of the service is going answers 409 in words, with
// a link to the running run; its progress fragment polls itself.
func TestReconcileConflictWhileRunning(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		now := b.clock.Now()
		running := models.ReconciliationRun{Service: "crm", TriggeredBy: "elsewhere", Owner: "other-host", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &running))
		require.NoError(t, models.RunProgress(db, running.ID, 200, 50, 0, now))
		op := b.signedIn("ops@example.com", models.RoleOperator)

		r := op.post("/reconcile", "/reconcile/start", url.Values{"service": {"crm"}})
		require.Equal(t, http.StatusConflict, r.status)
		require.Contains(t, r.body, "already running")
		require.Contains(t, r.body, fmt.Sprintf(`href="/reconcile/%d"`, running.ID))
		require.EqualValues(t, 1, b.auditCount("reconcile.start", models.OutcomeDenied))

		page := fmt.Sprintf("/reconcile/%d", running.ID)
		r = op.get(page)
		require.Contains(t, r.body, `hx-trigger="every 1s, live"`)
		require.Contains(t, r.body, `<progress id="run-progress-bar" max="200" value="50"`)
		require.Contains(t, r.body, "Scanned 50 of about 200")
		require.Contains(t, r.body, `data-testid="run-cancel"`)
		require.Contains(t, r.body, "Found so far: 0 discrepancies")
		require.NotContains(t, r.body, `data-testid="run-counts"`, "one count of what was found, the one that keeps up")
		p := op.get(page + "/progress")
		require.Empty(t, p.header.Get("HX-Refresh"))
		require.Contains(t, p.body, `hx-trigger="every 1s, live"`)

		// What the run finds shows under the bar as it goes.
		require.NoError(t, models.InsertFindings(db, []models.Finding{{RunID: running.ID, Kind: discrepancy.NeverSynced,
			Status: models.DiscrepancyFixed, LocalType: "order", LocalID: "1", ExternalKey: "site_order_1", CreatedAt: now}}))
		p = op.get(page + "/progress")
		require.Contains(t, p.body, "Found so far: 1 discrepancy: 1 fixed")

		r = op.post(page, page+"/cancel", nil)
		require.Equal(t, http.StatusConflict, r.status, "the run is going on another instance")
		require.Contains(t, r.body, "another instance")
	})
}

// A run awaiting confirmation that a newer run has superseded says so in
// words, offers no Confirm, and a forged confirmation is refused with the
// reason; a newer run that did not finish comparing also keeps it from
// being confirmed, and the page says why.
func TestReconcileSupersededRunCannotBeConfirmed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rec := reconcileServer(t, db, 1)
		for n := 1; n <= 3; n++ {
			b.orphanRecord(n)
		}
		old, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{TriggeredBy: "scheduler"})
		require.NoError(t, err)
		require.Equal(t, models.RunAwaiting, old.Status)
		op := b.signedIn("ops@example.com", models.RoleOperator)
		page := fmt.Sprintf("/reconcile/%d", old.ID)

		now := b.clock.Now()
		failed := models.ReconciliationRun{Service: "crm", TriggeredBy: "elsewhere", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &failed))
		require.NoError(t, models.FinishRun(db, failed.ID, models.RunFailed, "listing failed", now))
		r := op.get(page)
		require.Contains(t, r.body, "Awaiting confirmation")
		require.Contains(t, r.body, `data-testid="run-not-confirmable"`)
		require.NotContains(t, r.body, `data-testid="run-confirm"`, "a failed newer run keeps it from being confirmed")

		b.clock.Advance(time.Second)
		newer, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{TriggeredBy: "scheduler", DryRun: true})
		require.NoError(t, err)
		require.Equal(t, models.RunCompleted, newer.Status)

		r = op.get(page)
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, `data-status="superseded"`)
		require.NotContains(t, r.body, "Awaiting confirmation")
		require.Regexp(t, fmt.Sprintf(`Superseded by\s*<a href="/reconcile/%d">run %d</a>:\s*its findings are out of date`, newer.ID, newer.ID), r.body)
		require.NotContains(t, r.body, `data-testid="run-confirm"`)
		row := between(t, op.get("/reconcile").body, fmt.Sprintf(`data-testid="run-row-%d"`, old.ID), "</tr>")
		require.Contains(t, row, "Superseded")

		r = op.post(page, page+"/confirm", nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, fmt.Sprintf("Run %d was superseded by run %d: its findings are out of date", old.ID, newer.ID))
		require.EqualValues(t, 1, b.auditCount("reconcile.confirm", models.OutcomeDenied))
		require.EqualValues(t, 0, b.auditCount("reconcile.confirm", models.OutcomeSuccess))
		var links int64
		require.NoError(t, db.Model(&models.Link{}).Count(&links).Error)
		require.EqualValues(t, 1, links, "only the fix within the safety valve was applied")
	})
}

// kindCode is a discrepancy kind's code shown as text, anywhere but in an
// attribute or in the kind filter's options.
var kindCode = regexp.MustCompile(`>[^<]*\b(missing_remote|unlinked_remote|duplicate_remote|field_mismatch|never_synced|failed_but_exists)\b`)

// codesOutsideFilter returns the kind codes body shows as text, leaving out
// the kind filter, where an operator reads them against the CSV export.
func codesOutsideFilter(body string) []string {
	if i := strings.Index(body, `<select id="f-kind"`); i >= 0 {
		j := strings.Index(body[i:], "</select>")
		body = body[:i] + body[i+j:]
	}
	return kindCode.FindAllString(body, -1)
}

// The overview, the runs list and a run's page say each kind in words;
// the codes show only in the kind filter and the CSV export, and no
// explanation speaks of the outbox.
func TestReconcilePagesSayKindsInWords(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		now := b.clock.Now()
		run := models.ReconciliationRun{Service: "crm", TriggeredBy: "test", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &run))
		require.NoError(t, models.FinishRun(db, run.ID, models.RunCompleted, "", now))
		for i, k := range discrepancy.Kinds {
			require.NoError(t, db.Create(&models.Discrepancy{RunID: run.ID, Kind: k, Status: models.DiscrepancyReported,
				LocalType: "order", LocalID: fmt.Sprint(i), ExternalKey: fmt.Sprintf("site_order_%d", i), Detail: "found", CreatedAt: now}).Error)
		}
		v := b.signedIn("vic@example.com", models.RoleViewer)
		page := fmt.Sprintf("/reconcile/%d", run.ID)
		for _, path := range []string{"/", "/reconcile", page, page + "?kind=never_synced"} {
			r := v.get(path)
			require.Equal(t, http.StatusOK, r.status, path)
			require.Empty(t, codesOutsideFilter(r.body), "%s shows kind codes as text", path)
			for _, label := range []string{"Missing at the provider", "Not linked here", "Duplicated at the provider",
				"Fields differ", "Never sent", "Failed, but it arrived"} {
				require.Contains(t, r.body, label, path)
			}
		}
		r := v.get(page)
		require.NotContains(t, between(t, r.body, `data-testid="run-kinds"`, "</table>"), "outbox")
		require.Contains(t, r.body, `<option value="never_synced">Never sent (never_synced)</option>`, "the filter names the code of the CSV")
		require.Contains(t, r.body, `href="/reconcile/`+fmt.Sprint(run.ID)+`?kind=missing_remote"`, "a kind's label filters by it")
		never := between(t, r.body, `data-testid="kind-never_synced"`, "</tr>")
		require.Contains(t, never, "queued for sending")
		require.Contains(t, never, "retries it from the Failed page", "a never-sent record whose link failed waits for a person")
		csv := v.get(page + "/discrepancies.csv").body
		require.Contains(t, csv, ",never_synced\n", "the export keeps the codes, last")
	})
}

var countCell = regexp.MustCompile(`(?s)data-testid="count-(\w+)">(.*?)</td>`)
var tag = regexp.MustCompile(`<[^>]*>`)

// statusCounts reads the count-* cells of a table row: status → number shown.
func statusCounts(row string) map[string]string {
	out := map[string]string{}
	for _, m := range countCell.FindAllStringSubmatch(row, -1) {
		out[m[1]] = strings.TrimSpace(tag.ReplaceAllString(m[2], ""))
	}
	return out
}

// The overview, the runs list and a run's page count a run's discrepancies
// with the same four words, in the same order, with the same numbers;
// each number leads to the discrepancies it counts.
func TestReconcileCountsAgreeAcrossPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		now := b.clock.Now()
		run := models.ReconciliationRun{Service: "crm", TriggeredBy: "test", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &run))
		require.NoError(t, models.FinishRun(db, run.ID, models.RunAwaiting, "", now))
		statuses := map[string]int{models.DiscrepancyFixed: 3, models.DiscrepancyReported: 2, models.DiscrepancyOpen: 1}
		i := 0
		for st, n := range statuses {
			for range n {
				i++
				require.NoError(t, db.Create(&models.Discrepancy{RunID: run.ID, Kind: discrepancy.NeverSynced, Status: st,
					LocalType: "order", LocalID: fmt.Sprint(i), ExternalKey: fmt.Sprintf("site_order_%d", i), Detail: "found", CreatedAt: now}).Error)
			}
		}
		want := map[string]string{"fixed": "3", "reported": "2", "open": "1", "resolved": "0"}
		heads := regexp.MustCompile(`>Fixed</th>\s*<th[^>]*>Waiting for a person</th>\s*<th[^>]*>Open</th>\s*<th[^>]*>Resolved by a person</th>`)
		v := b.signedIn("vic@example.com", models.RoleViewer)
		page := fmt.Sprintf("/reconcile/%d", run.ID)

		overview := v.get("/").body
		require.Equal(t, want, statusCounts(between(t, overview, `data-testid="reconcile-crm"`, "</tr>")), "the overview")
		list := v.get("/reconcile").body
		require.Equal(t, want, statusCounts(between(t, list, fmt.Sprintf(`data-testid="run-row-%d"`, run.ID), "</tr>")), "the runs list")
		r := v.get(page).body
		require.Contains(t, between(t, r, `data-testid="run-counts"`, "</dd>"), "6 discrepancies: 3 fixed, 2 waiting for a person, 1 open, 0 resolved by a person")
		kind := between(t, r, `data-testid="kind-never_synced"`, "</tr>")
		require.Regexp(t, `<td class="num">3</td>\s*<td class="num">2</td>\s*<td class="num">1</td>\s*<td class="num">0</td>`, kind, "the kinds table: fixed, waiting, open, resolved")
		for name, body := range map[string]string{"overview": overview, "runs list": list, "run page": r} {
			require.Regexp(t, heads, body, "%s: the same headings, in the same order", name)
			require.NotContains(t, body, "Not fixed", name)
			lower := strings.ToLower(body)
			require.Equal(t, strings.Count(lower, "waiting for a person"), strings.Count(lower, "for a person"), "%s: no other words for it", name)
			require.Contains(t, body, "Waiting for a person:</strong>", "%s: the legend says what each count means", name)
		}
		require.Contains(t, between(t, list, fmt.Sprintf(`data-testid="run-row-%d"`, run.ID), "</tr>"),
			fmt.Sprintf(`href="%s?status=reported"`, page), "a count leads to what it counts")
		require.Equal(t, 2, strings.Count(v.get(page+"?status=reported").body, `data-testid="disc-row-`))
		require.Equal(t, 1, strings.Count(v.get(page+"?status=open").body, `data-testid="disc-row-`))
	})
}
