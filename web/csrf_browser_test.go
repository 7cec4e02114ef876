package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// siblingPage is a page on another port of syncdesk's host: same site,
// another origin. It plants syncdesk_csrf — cookies know no ports — and
// offers a form that pauses crm with the planted value as its token.
func siblingPage(target string) http.Handler {
	const planted = "planted-by-a-sibling-origin-0123456789"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "syncdesk_csrf", Value: planted, Path: "/"})
		fmt.Fprintf(w, `<!doctype html><html><body><form method="post" action="%s/services/crm/pause">
<input type="hidden" name="_csrf" value="%s"><input type="hidden" name="reason" value="forged">
<button type="submit" data-testid="forge">Win a prize</button></form></body></html>`, target, planted)
	})
}

// In real Chromium, signed in, a sibling origin's form posts with the
// session cookie (SameSite lets same-site through) and a planted token: it
// is refused with the reason in words, and crm is not paused.
func TestBrowserSiblingOriginCannotForgeAForm(t *testing.T) {
	browsertest.SkipShort(t) // not Parallel: setupServices sets environment variables
	b := setupServices(t, dbtest.SQLite(t))
	b.user("ana@example.com", models.RoleOperator)
	sibling := httptest.NewServer(siblingPage(b.srv.URL))
	t.Cleanup(sibling.Close)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")

	for _, width := range []int64{1280, 420} {
		require.NoError(t, chromedp.Do(ctx,
			chromedp.EmulateViewport(width, 860),
			chromedp.Navigate(sibling.URL+"/"),
			chromedp.WaitVisible(testid("forge")),
			chromedp.Click(testid("forge")),
			// The refusal, or the Services page with its flash had the forgery passed.
			chromedp.WaitVisible(testid("problem")+", "+testid("flash")),
		))
		page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		require.NoError(t, err)
		require.Contains(t, page, "did not come from this site", "at %d px the forged form was not refused", width)
		require.Contains(t, page, sibling.URL, "the page names where the form came from")
		browsertest.Screenshot(ctx, t, fmt.Sprintf("csrf-refused-%d", width))
	}
	paused, err := models.IsPaused(b.db, "crm")
	require.NoError(t, err)
	require.False(t, paused, "a sibling origin's form paused crm")
	require.Zero(t, b.auditCount("service.pause", models.OutcomeSuccess))

	// The person's own form, in the same browser, still works.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 860),
		chromedp.Navigate(b.srv.URL+"/services"),
		chromedp.WaitVisible(testid("pause-crm")),
		chromedp.SendKeys("#reason-crm", "provider maintenance"),
		chromedp.Click(testid("pause-crm")),
		chromedp.WaitVisible(testid("paused-banner")),
	))
	paused, err = models.IsPaused(b.db, "crm")
	require.NoError(t, err)
	require.True(t, paused)
}
