package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// An operator pauses the CRM from the Services page, sees the banner on
// another page, follows it back and resumes — with the keyboard-reachable
// form and its labelled reason field.
func TestBrowserPauseAndResumeAService(t *testing.T) {
	browsertest.SkipShort(t) // not Parallel: setupServices sets environment variables
	b := setupServices(t, dbtest.SQLite(t))
	b.user("ana@example.com", models.RoleOperator)
	failed := b.link("order", "1", "crm", models.StatusFailed)
	b.link("order", "2", "crm", models.StatusNew)
	paid := b.link("payment", "1", "payments", models.StatusSuccess)
	for i, o := range []models.Outcome{models.OutcomeOK, models.OutcomeOK, models.OutcomeTemporary, models.OutcomeAmbiguous, models.OutcomePermanent} {
		b.attempt(failed, o, b.clock.Now().Add(-time.Duration(i)*time.Minute))
		b.attempt(paid, models.OutcomeOK, b.clock.Now().Add(-time.Duration(i)*time.Minute))
	}
	ctx := browsertest.New(t)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/services"),
		chromedp.WaitVisible(testid("sign-in")),
		chromedp.SendKeys(testid("email"), "ana@example.com"),
		chromedp.SendKeys(testid("password"), testPassword),
		chromedp.Click(testid("sign-in")),
		chromedp.WaitVisible(testid("service-crm")),
	))
	b.clock.Advance(3 * time.Minute) // the banner says how long ago

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys("#reason-crm", "provider maintenance"),
		chromedp.Click(testid("pause-crm")),
		chromedp.WaitVisible(testid("paused-banner")),
		chromedp.WaitVisible(testid("flash")),
	))
	flash, err := chromedp.Run(ctx, chromedp.Text(testid("flash")))
	require.NoError(t, err)
	require.Contains(t, flash, "Sending is paused")
	card, err := chromedp.Run(ctx, chromedp.Text(testid("service-crm")))
	require.NoError(t, err)
	require.Contains(t, card, "Paused")
	require.Contains(t, card, "Resume sending")
	browsertest.Screenshot(ctx, t, "services")

	b.clock.Advance(12 * time.Minute)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/audit"),
		chromedp.WaitVisible(testid("paused-banner")),
	))
	banner, err := chromedp.Run(ctx, chromedp.Text(testid("paused-banner")))
	require.NoError(t, err)
	for _, want := range []string{"Sending to crm is paused.", "12 min ago", "ana@example.com", "provider maintenance", "nothing is lost"} {
		require.Contains(t, banner, want)
	}
	browsertest.Screenshot(ctx, t, "paused-banner")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`[data-testid="paused-banner"] a`),
		chromedp.WaitVisible(testid("resume-crm")),
		chromedp.Click(testid("resume-crm")),
		chromedp.WaitVisible(testid("flash")),
		chromedp.WaitVisible(testid("pause-crm")),
	))
	flash, err = chromedp.Run(ctx, chromedp.Text(testid("flash")))
	require.NoError(t, err)
	require.Contains(t, flash, "Sending is resumed")
	gone, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid="paused-banner"]') === null`))
	require.NoError(t, err)
	require.True(t, gone, "the banner must go once the service is resumed")
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	require.NoError(t, err)
	require.False(t, strings.Contains(html, crmTokenValue), "a secret reached the browser")
	require.EqualValues(t, 1, b.auditCount("service.pause", models.OutcomeSuccess))
	require.EqualValues(t, 1, b.auditCount("service.resume", models.OutcomeSuccess))
}

// A service its breaker paused reads as such on the Services page, at 1280
// and 420 px without sideways scroll, and Keep paused makes it the
// operator's pause.
func TestBrowserKeepAnAutomaticPause(t *testing.T) {
	browsertest.SkipShort(t)
	b := setupServices(t, dbtest.SQLite(t))
	b.user("ana@example.com", models.RoleOperator)
	_, _, err := models.Pause(b.db, models.ServicePause{Service: "crm", PausedBy: models.AutomaticPauser, PausedAt: b.clock.Now(),
		Reason: "paused automatically: 20 calls in a row answered 503"})
	require.NoError(t, err)
	b.clock.Advance(4 * time.Minute)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	for _, width := range []int64{1280, 420} {
		require.NoError(t, chromedp.Do(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(b.srv.URL+"/services"),
			chromedp.WaitVisible(testid("keep-paused-crm")),
		))
		card, err := chromedp.Run(ctx, chromedp.Text(testid("service-crm")))
		require.NoError(t, err)
		require.Contains(t, card, "by syncdesk (automatic)")
		require.Contains(t, card, "sending resumes by itself")
		scroll, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		require.NoError(t, err)
		require.LessOrEqual(t, scroll, int(width), "no sideways scroll at %d px", width)
		browsertest.Screenshot(ctx, t, fmt.Sprintf("services-automatic-pause-%d", width))
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(testid("keep-paused-crm")),
		chromedp.WaitVisible(testid("flash")),
	))
	card, err := chromedp.Run(ctx, chromedp.Text(testid("service-crm")))
	require.NoError(t, err)
	require.Contains(t, card, "by syncdesk (automatic)", "the breaker paused it")
	require.Contains(t, card, "Kept paused by ana@example.com at "+b.clock.Now().UTC().Format("15:04:05")+" UTC.")
	require.Contains(t, card, "until someone resumes it")
	scroll, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	require.NoError(t, err)
	require.LessOrEqual(t, scroll, 420, "no sideways scroll at 420 px once kept")
	browsertest.Screenshot(ctx, t, "services-automatic-pause-kept-420")
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Reload(), chromedp.WaitVisible(testid("kept-paused-crm"))))
	browsertest.Screenshot(ctx, t, "services-automatic-pause-kept-1280")
}
