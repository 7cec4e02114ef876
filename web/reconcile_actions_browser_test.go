package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// The acceptance: resolve a row waiting for a person from the
// page — an unlinked object linked to a record, a duplicate's object kept —
// and dismiss one with a reason.
func TestBrowserResolveReconciliationRows(t *testing.T) {
	browsertest.Parallel(t)
	db := dbtest.SQLite(t)
	b, run, orphan, dup := resolveScene(t, db)
	unlinked := findingOf(t, db, run.ID, discrepancy.UnlinkedRemote, "drift_0")
	duplicate := findingOf(t, db, run.ID, discrepancy.DuplicateRemote, "2")
	stray := findingOf(t, db, run.ID, discrepancy.UnlinkedRemote, "stray")
	b.user("ana@example.com", models.RoleOperator)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	page := fmt.Sprintf("%s/reconcile/%d?status=reported", b.srv.URL, run.ID)
	row := func(id int64) string { return fmt.Sprintf(`[data-testid="disc-row-%d"]`, id) }

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(testid("disc-table")),
		chromedp.Click(row(unlinked.ID)+` summary`),
		chromedp.WaitVisible(row(unlinked.ID)+` [data-testid="resolve-id"]`),
	))
	browsertest.Screenshot(ctx, t, "reconcile-resolve")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(row(unlinked.ID)+` [data-testid="resolve-id"]`, "50"),
		chromedp.Click(row(unlinked.ID)+` [data-testid="resolve-link-submit"]`),
	))
	waitDone(t, ctx, "disc-linked")
	require.Equal(t, orphan, linkOf(t, db, "50").ExternalID)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(row(duplicate.ID)+` summary`),
		chromedp.Click(row(duplicate.ID)+fmt.Sprintf(` input[value="%s"]`, dup)),
		chromedp.Click(row(duplicate.ID)+` [data-testid="resolve-keep-submit"]`),
	))
	waitDone(t, ctx, "disc-kept")
	require.Equal(t, dup, linkOf(t, db, "2").ExternalID)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(row(stray.ID)+` summary`),
		chromedp.SendKeys(row(stray.ID)+` [data-testid="dismiss-reason"]`, "made by hand for a demo"),
		chromedp.Click(row(stray.ID)+` [data-testid="resolve-dismiss-submit"]`),
	))
	waitDone(t, ctx, "disc-dismissed")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/reconcile/%d?status=resolved", b.srv.URL, run.ID)),
		chromedp.WaitVisible(testid("disc-table")),
	))
	table := textOf(t, ctx, testid("disc-table"))
	require.Contains(t, table, "Linked by ana@example.com")
	require.Contains(t, table, "One kept by ana@example.com")
	require.Contains(t, table, "Dismissed by ana@example.com")
	require.Contains(t, table, "made by hand for a demo")
	browsertest.Screenshot(ctx, t, "reconcile-resolved")
}

// waitDone waits for the page an action redirected to: its flash says the
// action's confirmation (flash.js drops ?done= from the address at once).
func waitDone(t *testing.T, ctx context.Context, done string) {
	t.Helper()
	want := flashes[done].text
	require.Eventually(t, func() bool {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`(document.querySelector('.flash') || {}).textContent || ''`))
		return err == nil && strings.Contains(got, want)
	}, 10*time.Second, 50*time.Millisecond, "no flash %q", want)
}

// The acceptance: apply a dry run's open fixes from its page.
func TestBrowserApplyADryRun(t *testing.T) {
	browsertest.Parallel(t)
	db := dbtest.SQLite(t)
	b, rec := reconcileServer(t, db, 0)
	b.seedOrders(1, 3)
	b.deleteRemote(2)
	b.orphanRecord(9)
	b.clock.Advance(time.Second)
	run, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{DryRun: true, TriggeredBy: "test"})
	require.NoError(t, err)
	b.user("ana@example.com", models.RoleOperator)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/reconcile/%d", b.srv.URL, run.ID)),
		chromedp.WaitVisible(testid("run-apply")),
	))
	require.Contains(t, textOf(t, ctx, testid("run-scanned")), "objects at crm")
	require.Contains(t, textOf(t, ctx, testid("run-apply")), "Apply these 2 open fixes")
	browsertest.Screenshot(ctx, t, "reconcile-dry-run")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(testid("run-apply")),
		chromedp.WaitVisible(testid("run-applied")),
	))
	require.Contains(t, textOf(t, ctx, `.flash`), "open fixes were applied")
	require.Contains(t, textOf(t, ctx, testid("run-counts")), "2 fixed")
	d, err := models.RunDetailByID(db, run.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2, d.All.Fixed)
	require.Equal(t, "ana@example.com", d.Run.AppliedBy)
	browsertest.Screenshot(ctx, t, "reconcile-dry-run-applied")
}

// The acceptance: the record timeline holds an attempt, a webhook
// and an audit entry in order, and "check the provider now" shows a field
// difference made at the sandbox.
func TestBrowserRecordTimelineAndCheck(t *testing.T) {
	browsertest.Parallel(t)
	db := dbtest.SQLite(t)
	b, _ := reconcileServer(t, db, 0)
	b.seedOrders(1, 1)
	b.clock.Advance(time.Minute)
	b.deliverDealUpdated(1, "msg_deal_1")
	b.clock.Advance(time.Minute)
	b.user("ana@example.com", models.RoleOperator)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	l := linkOf(t, db, "1")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/links/%d", b.srv.URL, l.ID)),
		chromedp.WaitVisible(`form[action$="/sync"] button`),
		chromedp.Click(`form[action$="/sync"] button`),
		chromedp.Sleep(300*time.Millisecond),
	))
	res, err := http.Post(b.cfg.Services["crm"].BaseURL+"/_sandbox/drift", "application/json", strings.NewReader(`{"alter":1}`))
	require.NoError(t, err)
	res.Body.Close()

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/records/order/1"),
		chromedp.WaitVisible(testid("record-timeline")),
	))
	kinds, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('[data-testid="timeline-entry"]')].map(e => e.dataset.kind)`))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(kinds), 3)
	require.Equal(t, []string{"attempt", "event", "audit"}, kinds[:3])
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(testid("check-provider")),
		chromedp.WaitVisible(testid("check-results")),
	))
	check := textOf(t, ctx, testid("check-results"))
	require.Contains(t, check, "It differs from the record")
	require.Contains(t, check, "title")
	require.Contains(t, check, "edited in the provider")
	browsertest.Screenshot(ctx, t, "record")
}
