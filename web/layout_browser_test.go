package web

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/sandbox"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// On a failure group's page the checkboxes are checkbox-sized, and Retry
// selected with nothing ticked keeps the list on screen with the reason.
func TestBrowserRetrySelectedWithNothingTicked(t *testing.T) {
	browsertest.Parallel(t)
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

// Retry on a failed link's page: when the sync ends the page reloads
// itself, so "Synced" never sits beside the old "Last error".
func TestBrowserLinkPageShowsTheStateAfterRetry(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleOperator)
	b.crm.SetOptions(sandbox.Options{RateValidation: 1})
	_, err := b.eng.Upsert(context.Background(), "order", "1", []byte(`{"title":"Order 1"}`))
	require.NoError(t, err)
	require.NoError(t, b.eng.Drain(context.Background()))
	b.crm.SetOptions(sandbox.Options{})
	links, _ := models.RecordLinks(b.db, "order", "1")
	require.Equal(t, models.StatusFailed, links[0].Status)
	id := links[0].ID
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.eng.Run(runCtx, time.Second) }()
	defer func() { stop(); <-done }()

	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+fmt.Sprintf("/links/%d", id)),
		chromedp.WaitVisible(".last-error"),
		chromedp.Click(testid(fmt.Sprintf("sync-%d", id))),
	))
	require.True(t, waitTrue(ctx, 15*time.Second, fmt.Sprintf(
		`document.querySelector('[data-testid="status-%d"]')?.dataset.status === 'success' && !document.querySelector('.last-error')`, id)),
		"the page shows the link synced and no old error")
	require.Contains(t, textOf(t, ctx, testid("attempts")), "deal.create")
	browsertest.Screenshot(ctx, t, "link-after-retry")
}

// waitTrue evaluates a JavaScript condition until it holds or timeout
// passes. Unlike chromedp.Poll it carries on across a reload of the page.
func waitTrue(ctx context.Context, timeout time.Duration, js string) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err == nil && ok {
			return true
		}
	}
	return false
}
