package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// Sync now on a link of a paused service says "paused", on the link and
// in the list, and the overview counts no sync in progress.
func TestBrowserPausedServiceLinkSaysPaused(t *testing.T) {
	browsertest.SkipShort(t) // not Parallel: setupServices sets environment variables
	b := setupServices(t, dbtest.SQLite(t))
	b.user("ana@example.com", models.RoleOperator)
	_, err := b.eng.Upsert(context.Background(), "order", "7", []byte(`{"title":"Order 7"}`))
	require.NoError(t, err)
	require.NoError(t, b.eng.Drain(context.Background()))
	links, _ := models.RecordLinks(b.db, "order", "7")
	id := links[0].ID
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	r := b.signedIn("olga@example.com", models.RoleOperator).post("/services", "/services/crm/pause", url.Values{"reason": {"maintenance"}})
	require.Equal(t, http.StatusSeeOther, r.status, r.body)

	status := testid(fmt.Sprintf("status-%d", id))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+fmt.Sprintf("/links/%d", id)),
		chromedp.WaitVisible(testid(fmt.Sprintf("sync-%d", id))),
		chromedp.Click(testid(fmt.Sprintf("sync-%d", id))),
	))
	require.True(t, waitTrue(ctx, 10*time.Second, `document.querySelector('`+status+`').innerText.includes('crm is paused: it goes when resumed')`),
		"the link says its service is paused")
	text := textOf(t, ctx, status)
	require.Contains(t, text, "Paused")
	require.NotContains(t, text, "Queued")
	require.NotContains(t, text, "in progress")
	browsertest.Screenshot(ctx, t, "link-paused")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/links"), chromedp.WaitVisible(status)))
	require.Contains(t, textOf(t, ctx, status), "Paused")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/"), chromedp.WaitVisible(testid("in-progress-total"))))
	require.Equal(t, "0", textOf(t, ctx, testid("in-progress-total")))
	require.Contains(t, textOf(t, ctx, testid("in-progress-held")), "1 more asked for on a paused service")
	browsertest.Screenshot(ctx, t, "overview-paused")
}

// An operator puts a failed link aside with a reason, finds it under Put
// aside, and brings it back; then does the same with a whole group.
func TestBrowserPutAsideAndBringBack(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.seedLinks(12) // failed: 3, 9 (422); 6, 12 (404)
	b.user("ana@example.com", models.RoleOperator)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")

	// One link.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/links/3"),
		chromedp.WaitVisible(testid("put-aside")),
		chromedp.SendKeys(testid("aside-reason"), "a test order from the shop"),
		chromedp.Click(testid("put-aside")),
		chromedp.WaitVisible(testid("aside-note")),
	))
	require.Contains(t, textOf(t, ctx, testid("status-3")), "Put aside")
	require.Contains(t, textOf(t, ctx, testid("aside-note")), "a test order from the shop")
	browsertest.Screenshot(ctx, t, "link-put-aside")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/failed"), chromedp.WaitVisible(testid("failed-groups"))))
	require.Equal(t, "Failed (3)", textOf(t, ctx, testid("tab-failed")))
	require.Equal(t, "Put aside (1)", textOf(t, ctx, testid("tab-aside")))
	browsertest.Screenshot(ctx, t, "failed")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(testid("tab-aside")), chromedp.WaitVisible(testid("failed-groups"))))
	require.Contains(t, textOf(t, ctx, testid("failed-groups")), "a test order from the shop")
	browsertest.Screenshot(ctx, t, "failed-aside")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`[data-testid="failed-example-0"] a`),
		chromedp.WaitVisible(testid("bring-back")),
		chromedp.Click(testid("bring-back")),
		chromedp.WaitVisible(testid("put-aside")),
	))
	require.Contains(t, textOf(t, ctx, testid("status-3")), "Failed")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/failed"), chromedp.WaitVisible(testid("tab-failed"))))
	require.Equal(t, "Failed (4)", textOf(t, ctx, testid("tab-failed")))

	// A whole group.
	group := models.ErrorGroup("crm", 404, "HTTP 404: no deal deal_6")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/failed/group?g="+url.QueryEscape(group)),
		chromedp.WaitVisible(testid("aside-group-form")),
	))
	browsertest.Screenshot(ctx, t, "failed-group")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(testid("aside-group-reason"), "deals deleted on purpose"),
		chromedp.Click(testid("aside-group")),
		chromedp.WaitVisible(testid("tab-aside")),
	))
	require.Equal(t, "Put aside (2)", textOf(t, ctx, testid("tab-aside")))
	require.Equal(t, "Failed (2)", textOf(t, ctx, testid("tab-failed")))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(testid("tab-aside")),
		chromedp.WaitVisible(testid("bring-back-group-0")),
		chromedp.Click(testid("bring-back-group-0")),
		chromedp.WaitVisible(testid("failed-links")), // the group's page, its links on Failed again
	))
	require.Contains(t, textOf(t, ctx, testid("failed-links")), "order 6")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/failed"), chromedp.WaitVisible(testid("tab-failed"))))
	require.Equal(t, "Failed (4)", textOf(t, ctx, testid("tab-failed")))
	require.Equal(t, "Put aside (0)", textOf(t, ctx, testid("tab-aside")))
}

// An admin enables a disabled user again and sees each person's last
// sign-in; the audit log hides sign-ins on request.
func TestBrowserAdminEnablesAUserAgain(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("root@example.com", models.RoleAdmin)
	ana := b.user("ana@example.com", models.RoleOperator)
	_, err := models.DisableUser(b.db, ana.Email, b.clock.Now())
	require.NoError(t, err)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "root@example.com")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/users"), chromedp.WaitVisible(testid("enable-ana@example.com"))))
	require.Equal(t, "just now", textOf(t, ctx, testid("last-sign-in-root@example.com")))
	require.Equal(t, "not yet", textOf(t, ctx, testid("last-sign-in-ana@example.com")))
	browsertest.Screenshot(ctx, t, "users-disabled")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(testid("enable-ana@example.com")), chromedp.WaitVisible(testid("users-table"))))
	require.True(t, waitTrue(ctx, 5*time.Second, `!document.querySelector('[data-testid="enable-ana@example.com"]')`), "ana is enabled")
	require.Contains(t, textOf(t, ctx, "main"), "The user is enabled")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/audit"),
		chromedp.WaitVisible(testid("audit-table")),
		chromedp.Click(testid("audit-hide-signins")),
		chromedp.Click(`form[action="/audit"] button[type="submit"]`),
	))
	require.True(t, waitTrue(ctx, 10*time.Second, `location.search.includes('hide_signins=1') && !!document.querySelector('#f-hide-signins:checked')`),
		"the filter is in the URL and stays ticked")
	table := textOf(t, ctx, testid("audit-table"))
	require.Contains(t, table, "Enabled a user again")
	require.NotContains(t, table, "Sign-in")
	browsertest.Screenshot(ctx, t, "audit-hide-signins")
}
