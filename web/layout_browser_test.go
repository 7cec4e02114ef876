package web

import (
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// On a failure group's page the checkboxes are checkbox-sized, and Retry
// selected with nothing ticked keeps the list on screen with the reason.
func TestBrowserRetrySelectedWithNothingTicked(t *testing.T) {
	b := setupSQLite(t)
	b.seedLinks(12)
	b.user("ana@example.com", models.RoleOperator)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	group := models.ErrorGroup("crm", 404, "HTTP 404: no deal deal_6")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/failed/group?g="+url.QueryEscape(group)),
		chromedp.WaitVisible(testid("failed-links")),
	))
	height, err := chromedp.Run(ctx, chromedp.Evaluate[float64](
		`document.querySelector('input[type=checkbox]').getBoundingClientRect().height`))
	require.NoError(t, err)
	require.LessOrEqual(t, height, 24.0, "a checkbox %v px tall: it took the text inputs' height", height)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(testid("retry-selected")),
		chromedp.WaitVisible(testid("retry-error")),
	))
	require.Contains(t, textOf(t, ctx, testid("retry-error")), "Nothing was selected")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(testid("failed-links"))))
	browsertest.Screenshot(ctx, t, "failed-group-nothing-selected")
}
