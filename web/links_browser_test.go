package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/sandbox"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

func signInBrowser(t *testing.T, ctx context.Context, base, email string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(testid("email")),
		chromedp.SendKeys(testid("email"), email),
		chromedp.SendKeys(testid("password"), testPassword),
		chromedp.Click(testid("sign-in")),
		chromedp.WaitVisible(testid("signed-in-user")),
	))
}

func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	require.NoError(t, err)
	return s
}

// An operator filters the failed links, opens one, double-clicks Sync now
// on a synced link — one send, "already in progress" shown, the status turns
// to success by itself — and bulk-retries a failure group after seeing its count.
func TestBrowserOperatorFindsAndFixesFailures(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleOperator)
	for i := 1; i <= 6; i++ {
		title := fmt.Sprintf("Order %d", i)
		if i%3 == 0 {
			title = "" // the CRM refuses it: title is required
		}
		_, err := b.eng.Upsert(context.Background(), "order", fmt.Sprint(i), []byte(fmt.Sprintf(`{"title":%q}`, title)))
		require.NoError(t, err)
	}
	require.NoError(t, b.eng.Drain(context.Background()))
	require.NoError(t, models.RefreshStats(b.db, b.clock.Now())) // as the refresh-stats task would
	ctx := browsertest.New(t)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.eng.Run(runCtx, time.Second) }()
	defer func() { stop(); <-done }()

	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/links"),
		chromedp.WaitVisible(testid("links-filters")),
		chromedp.SetValue("#f-status", "failed"),
		chromedp.Click(testid("links-apply")),
	))
	// The reloaded page marks the chosen filter as selected.
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitReady(`#f-status option[value="failed"][selected]`), chromedp.WaitVisible(testid("links-table"))))
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	require.Contains(t, loc, "status=failed", "the filter is in the URL")
	table := textOf(t, ctx, testid("links-table"))
	require.Contains(t, table, "title is required")
	require.NotContains(t, table, "Synced")
	browsertest.Screenshot(ctx, t, "links-failed")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`[data-testid="links-table"] tbody a`), chromedp.WaitVisible(testid("attempts"))))
	require.Contains(t, textOf(t, ctx, "main"), "HTTP 422: title is required")
	browsertest.Screenshot(ctx, t, "link-detail")

	// Sync now twice on a synced link while the CRM is slow: once on its
	// page, then again from a links list opened before, in another tab.
	links, _ := models.RecordLinks(b.db, "order", "1")
	id := links[0].ID
	b.crm.SetOptions(sandbox.Options{Latency: 1500 * time.Millisecond})
	before := b.crm.Requests().Total
	list, closeList := chromedp.NewContext(ctx)
	defer closeList()
	syncBtn, status := testid(fmt.Sprintf("sync-%d", id)), testid(fmt.Sprintf("status-%d", id))
	require.NoError(t, chromedp.Do(list, chromedp.Navigate(b.srv.URL+"/links"), chromedp.WaitVisible(syncBtn)))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+fmt.Sprintf("/links/%d", id)),
		chromedp.WaitVisible(syncBtn),
		chromedp.Click(syncBtn),
	))
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`/(Queued\s+by you|Sending\s+asked by you) at \d\d:\d\d:\d\d UTC/.test(document.querySelector('`+status+`').innerText)`, chromedp.WithPollingTimeout(10*time.Second)))
	require.NoError(t, err, "the first click queues the sync, by you, at a UTC time (the worker may have taken it already)")
	require.True(t, waitTrue(ctx, 5*time.Second, `document.querySelector('`+syncBtn+`').disabled`), "the button is disabled while the sync is asked for")
	// The stale list in the other tab: its button is still enabled.
	width := `document.querySelector('[data-testid="links-table"]').offsetWidth + ',' + document.querySelector('` + status + `').parentElement.offsetWidth`
	widthBefore, err := chromedp.Run(list, chromedp.Evaluate[string](width))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(list, chromedp.Click(syncBtn)))
	_, err = chromedp.Run(list, chromedp.Poll[bool](
		`document.querySelector('`+status+`').innerText.includes('already asked by you at ')`, chromedp.WithPollingTimeout(10*time.Second)))
	require.NoError(t, err, "the second click by the same person says \"by you\"")
	widthAfter, err := chromedp.Run(list, chromedp.Evaluate[string](width))
	require.NoError(t, err)
	require.Equal(t, widthBefore, widthAfter, "the note does not re-flow the links table")
	browsertest.Screenshot(list, t, "sync-again-list")
	browsertest.Screenshot(ctx, t, "sync-debounced")
	closeList()
	require.True(t, waitTrue(ctx, 15*time.Second, `document.querySelector('`+status+`')?.dataset.status === 'success'`),
		"the status turns to success by itself")
	require.Equal(t, before+1, b.crm.Requests().Total, "two clicks, one send")
	b.crm.SetOptions(sandbox.Options{})

	// Bulk retry of the failure group: the count first, then exactly those.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/failed"),
		chromedp.WaitVisible(testid("failed-groups")),
		chromedp.Click(testid("retry-group-0")),
		chromedp.WaitVisible(testid("confirm-count")),
	))
	require.Equal(t, "Retry 2 failed links?", textOf(t, ctx, testid("confirm-count")))
	browsertest.Screenshot(ctx, t, "bulk-retry-confirm")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(testid("confirm-retry")), chromedp.WaitVisible(testid("flash"))))
	require.Contains(t, textOf(t, ctx, testid("flash")), "2 links are queued")
	require.True(t, waitTrue(ctx, 5*time.Second, `location.search === ''`), "the address bar drops ?done= and the counts")
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible("main h1")))
	flashes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="flash"]').length`))
	require.NoError(t, err)
	require.Zero(t, flashes, "a reload does not say it again")
	var retried int64
	require.Eventually(t, func() bool {
		b.db.Model(&models.Attempt{}).Where("link_id IN (?)", b.db.Model(&models.Link{}).Select("id").Where("local_id IN ?", []string{"3", "6"})).Count(&retried)
		return retried == 4
	}, 10*time.Second, 50*time.Millisecond, "each of the two failed links was sent once more")
}

// A viewer sees no action buttons, and a POST forged from the viewer's own
// session is refused with 403 and audited.
func TestBrowserViewerCannotAct(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.seedLinks(6)
	b.user("vic@example.com", models.RoleViewer)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "vic@example.com")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/links/3"), chromedp.WaitVisible(testid("attempts")+", .empty")))
	body := textOf(t, ctx, "main")
	require.NotContains(t, body, "Retry")
	require.NotContains(t, body, "Mark failed")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/failed"), chromedp.WaitVisible(testid("failed-groups"))))
	require.NotContains(t, textOf(t, ctx, "main"), "Retry all")

	code, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(async () => {
		const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRF-Token'];
		const r = await fetch('/links/3/sync', {method: 'POST', headers: {'X-CSRF-Token': token}});
		return r.status;
	})()`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, 403, code)
	var denied []models.AuditEntry
	require.NoError(t, b.db.Where("action = ? AND actor = ?", "access.denied", "vic@example.com").Find(&denied).Error)
	require.Len(t, denied, 1)
	require.True(t, strings.HasPrefix(denied[0].Target, "POST /links/3/sync"))
}
