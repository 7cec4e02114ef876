package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/sandbox"
	"github.com/syncdesk/syncdesk/sync/services"
	"github.com/syncdesk/syncdesk/views"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// refreshStatsEvery recounts the aggregates as the refresh-stats task does
// (every 10 s in syncdesk; here every period) until the test ends.
func (b *bundle) refreshStatsEvery(period time.Duration) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for t := time.NewTicker(period); ; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = models.RefreshStats(b.db.WithContext(ctx), b.clock.Now())
			}
		}
	}()
	b.t.Cleanup(func() { stop(); <-done })
}

// pollsOf counts the requests for path the page has sent from script (the
// browser's own resource timing record, not htmx's word for it).
func pollsOf(t *testing.T, ctx context.Context, path string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType('resource').filter(e =>
		e.initiatorType === 'xmlhttprequest' && new URL(e.name).pathname + new URL(e.name).search === '`+path+`').length`))
	require.NoError(t, err)
	return n
}

// An overview left open while records arrive through the API shows the new
// counts within 15 s, without a reload, and marks the counts that changed.
func TestBrowserOverviewKeepsUpWithTheAPI(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("vera@example.com", models.RoleViewer)
	a := b.api()
	for i := 1; i <= 2; i++ {
		code, out := a.do("PUT", fmt.Sprintf("/api/v1/records/order/%d", i), fmt.Sprintf(`{"title":"Order %d"}`, i))
		require.Equal(t, http.StatusOK, code, out)
	}
	require.NoError(t, models.RefreshStats(b.db, b.clock.Now()))
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "vera@example.com")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/"), chromedp.WaitVisible(testid("status-table"))))
	total := `document.querySelector('[data-key="total-crm"]')`
	require.True(t, waitTrue(ctx, 5*time.Second, total+`.dataset.val === '2'`))
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument = true`))
	require.NoError(t, err)

	b.refreshStatsEvery(2 * time.Second)
	for i := 3; i <= 5; i++ {
		code, out := a.do("PUT", fmt.Sprintf("/api/v1/records/order/%d", i), fmt.Sprintf(`{"title":"Order %d"}`, i))
		require.Equal(t, http.StatusOK, code, out)
	}
	require.True(t, waitTrue(ctx, 15*time.Second, total+`.dataset.val === '5' && `+total+`.classList.contains('live-changed')`),
		"the overview shows the new total, marked, within 15 s")
	require.Equal(t, "5", strings.TrimSpace(textOf(t, ctx, `[data-key="total-crm"]`)))
	browsertest.Screenshot(ctx, t, "overview-live")
	marked, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('.live-changed')].map(e => e.dataset.key)`))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"total-crm", "count-crm-new"}, marked, "only what changed is marked")
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument === true`))
	require.NoError(t, err)
	require.True(t, same, "no reload: the region was swapped in place")
	require.True(t, waitTrue(ctx, 6*time.Second, `document.querySelectorAll('.live-changed').length === 0`),
		"the mark lasts a moment")
}

// A link page waiting for its retry turns "Synced" by itself once the
// retry has gone through.
func TestBrowserLinkPageWaitingForARetryTurnsSynced(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleOperator)
	b.crm.Script(sandbox.TooMany(30 * time.Second))
	b.orders(1, 1, titled)
	links, err := models.RecordLinks(b.db, "order", "1")
	require.NoError(t, err)
	id := links[0].ID
	require.Equal(t, models.StatusRetry, links[0].Status)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	status := testid(fmt.Sprintf("status-%d", id))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+fmt.Sprintf("/links/%d", id)), chromedp.WaitVisible(status)))
	require.Contains(t, textOf(t, ctx, status), "Will retry")
	require.Contains(t, textOf(t, ctx, status), "in 30 s")
	browsertest.Screenshot(ctx, t, "link-waiting-for-retry")

	// The retry is due and goes: the sender runs as the send task does.
	b.clock.Advance(31 * time.Second)
	require.NoError(t, b.eng.Drain(context.Background()))
	require.True(t, waitTrue(ctx, 15*time.Second, `document.querySelector('`+status+`')?.dataset.status === 'success'`),
		"the link page turns Synced by itself")
	require.Contains(t, textOf(t, ctx, status), "Synced")
	require.NotContains(t, textOf(t, ctx, "main"), "Last error", "the whole page is of now, not only the badge")
	browsertest.Screenshot(ctx, t, "link-synced-by-itself")
}

// A hidden tab asks for nothing: the polls stop while the document is
// hidden and one goes at once when it shows again. Without live.js the
// region's "every 5s" would keep polling behind the person's back.
func TestBrowserPollingStopsWhileHidden(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("vera@example.com", models.RoleViewer)
	b.orders(1, 2, titled)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "vera@example.com")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/failed"), chromedp.WaitVisible("#live")))
	polls := func() int { return pollsOf(t, ctx, "/failed") }
	require.True(t, waitFor(12*time.Second, func() bool { return polls() >= 1 }), "a visible page polls")

	setVisibility := func(state string) {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => '`+
			state+`'}); Object.defineProperty(document, 'hidden', {configurable: true, get: () => `+fmt.Sprint(state == "hidden")+
			`}); document.dispatchEvent(new Event('visibilitychange')); true`))
		require.NoError(t, err)
	}
	setVisibility("hidden")
	time.Sleep(300 * time.Millisecond) // a poll already on its way
	before := polls()
	time.Sleep(12 * time.Second) // more than two of the region's 5 s periods
	require.Equal(t, before, polls(), "no poll while the document is hidden")

	setVisibility("visible")
	require.True(t, waitFor(2*time.Second, func() bool { return polls() > before }), "a poll goes as soon as the tab shows again")
}

// waitFor waits until ok holds, or the timeout.
func waitFor(timeout time.Duration, ok func() bool) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return false
}

// A failure group left open while more links fail with the same cause
// shows them by itself, marked, and a box the operator had ticked stays ticked.
func TestBrowserFailedGroupKeepsUpAndKeepsTheTickedBoxes(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleOperator)
	noTitle := func(int) string { return "" }
	b.orders(1, 2, noTitle)
	group := failedGroupOf(t, b.db)
	links, err := models.RecordLinks(b.db, "order", "1")
	require.NoError(t, err)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	box := fmt.Sprintf("#sel-%d", links[0].ID)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/failed/group?g="+url.QueryEscape(group)),
		chromedp.WaitVisible(box),
		chromedp.Click(box),
	))

	b.orders(3, 3, noTitle)
	links, err = models.RecordLinks(b.db, "order", "3")
	require.NoError(t, err)
	row := fmt.Sprintf(`document.querySelector('[data-key="link-%d"]')`, links[0].ID)
	require.True(t, waitTrue(ctx, 12*time.Second, row+`?.classList.contains('live-changed')`), "the new failure shows, marked")
	ticked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('`+box+`').checked`))
	require.NoError(t, err)
	require.True(t, ticked, "the swap keeps the ticked box")
	browsertest.Screenshot(ctx, t, "failed-group-live")
}

// The paused banner sits under the header, outside the page's live region,
// yet a pause made elsewhere shows on a page left open, and a resume takes
// it away, without a reload: each poll carries the banner out of band.
func TestBrowserAPauseShowsOnAnOpenPage(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.web.pauser = services.NewPauser(b.db, b.cfg.ServiceNames(), b.clock, slog.New(slog.DiscardHandler))
	b.user("vera@example.com", models.RoleViewer)
	code, out := b.api().do("PUT", "/api/v1/records/order/1", `{"title":"Order 1"}`)
	require.Equal(t, http.StatusOK, code, out)
	require.NoError(t, models.RefreshStats(b.db, b.clock.Now()))
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "vera@example.com")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/"), chromedp.WaitVisible(testid("status-table"))))
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument = true`))
	require.NoError(t, err)
	banner := `document.querySelector('[data-testid="paused-banner"]')`
	require.True(t, waitTrue(ctx, time.Second, banner+` === null`))

	_, _, err = models.Pause(b.db, models.ServicePause{Service: "crm", PausedBy: "olga@example.com", PausedAt: b.clock.Now(), Reason: "provider maintenance"})
	require.NoError(t, err)
	b.clock.Advance(services.CacheTTL) // as a pause made on another instance is seen here
	require.True(t, waitTrue(ctx, 15*time.Second, banner+` !== null && `+banner+`.textContent.includes('Sending to crm is paused')`),
		"the banner shows within 15 s")
	require.Contains(t, textOf(t, ctx, testid("paused-banner")), "provider maintenance")
	browsertest.Screenshot(ctx, t, "paused-banner-live")

	_, err = models.Resume(b.db, "crm")
	require.NoError(t, err)
	b.clock.Advance(services.CacheTTL)
	require.True(t, waitTrue(ctx, 15*time.Second, banner+` === null`), "the banner goes within 15 s of the resume")
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument === true`))
	require.NoError(t, err)
	require.True(t, same, "no reload")
}

// The open alerts' count beside Alerts keeps up too: an incident opened by
// a check (on any instance) shows on a page left open, and goes when the
// incident is over.
func TestBrowserTheOpenAlertsCountKeepsUp(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("vera@example.com", models.RoleViewer)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "vera@example.com")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/links"), chromedp.WaitVisible(`#live`)))
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument = true`))
	require.NoError(t, err)
	count := `document.querySelector('[data-testid="nav-alerts-count"]')`
	require.True(t, waitTrue(ctx, time.Second, count+` === null`), "no count while nothing is open")

	change := models.IncidentChange{State: "opened", Title: "crm has been paused for 11 minutes", Text: "Resume it.", At: b.clock.Now()}
	for _, subject := range []string{"crm", "erp"} {
		opened, err := models.OpenIncident(b.db, models.Incident{Rule: "service_paused", Subject: subject, URL: "/services"}, change)
		require.NoError(t, err)
		require.True(t, opened)
	}
	b.clock.Advance(alertsTTL) // past the count's cache
	require.True(t, waitTrue(ctx, 15*time.Second, count+` !== null && `+count+`.textContent.trim().startsWith('2')`),
		"the count shows within 15 s")
	require.Contains(t, textOf(t, ctx, testid("nav-alerts-count")), "2 alerts open", "said in words for a screen reader")
	browsertest.Screenshot(ctx, t, "nav-alerts-count")

	open, err := models.OpenIncidents(b.db)
	require.NoError(t, err)
	for _, inc := range open {
		_, err := models.ResolveIncident(b.db, inc.ID, models.IncidentChange{State: "resolved", At: b.clock.Now()})
		require.NoError(t, err)
	}
	b.clock.Advance(alertsTTL)
	require.True(t, waitTrue(ctx, 15*time.Second, count+` === null`), "the count goes when the incidents are over")
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument === true`))
	require.NoError(t, err)
	require.True(t, same, "no reload")
}

// A page whose polls the server does not answer (restarting, its database
// down) says it is not up to date, rather than go on saying when it was
// counted as if it kept up; the note goes once a poll is answered again.
func TestBrowserAPageWhosePollsFailSaysItIsNotUpToDate(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("vera@example.com", models.RoleViewer)
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() && r.Header.Get("HX-Target") == views.LiveID {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		b.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, srv.URL, "vera@example.com")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(testid("in-progress-total"))))
	note := `document.querySelector('[data-testid="live-stale"]')`
	poll := `htmx.trigger(document.getElementById('live'), 'live'), true`

	failing.Store(true)
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](poll))
	require.NoError(t, err)
	require.True(t, waitTrue(ctx, 5*time.Second, note+` !== null`), "a failed poll leaves a note")
	require.Regexp(t, `^Not up to date: the server did not answer at \d\d:\d\d:\d\d UTC\.`, textOf(t, ctx, testid("live-stale")))
	browsertest.Screenshot(ctx, t, "live-stale")

	failing.Store(false)
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](poll))
	require.NoError(t, err)
	require.True(t, waitTrue(ctx, 5*time.Second, note+` === null`), "an answered poll takes the note away")
}
