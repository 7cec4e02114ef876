package web

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// The services page with a source reading and one failing fits a phone and
// a laptop; an operator pauses a source with the keyboard-reachable form.
func TestBrowserSourcesFitAndPause(t *testing.T) {
	browsertest.SkipShort(t) // not Parallel: setupSources sets an environment variable
	b := setupSources(t, dbtest.SQLite(t))
	b.user("ana@example.com", models.RoleOperator)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	checkFits(t, ctx, b.srv.URL, page{name: "services-sources", path: "/services"})
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1366, 800), chromedp.Navigate(b.srv.URL+"/services"),
		chromedp.WaitVisible(testid("source-shop"))))
	browsertest.Screenshot(ctx, t, "services-sources-wide")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys("#source-reason-shop", "shop database upgrade"),
		chromedp.Click(testid("pause-source-shop")),
		chromedp.WaitVisible(testid("resume-source-shop")),
	))
	flash, err := chromedp.Run(ctx, chromedp.Text(testid("flash")))
	require.NoError(t, err)
	require.Contains(t, flash, "Reading the source is paused")
	card, err := chromedp.Run(ctx, chromedp.Text(testid("source-shop")))
	require.NoError(t, err)
	require.Contains(t, card, "shop database upgrade")
}
