package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// After a delivery with a bad signature, posted through the real server,
// a support person sees the warning on the events page and the Services
// page, on a desktop and on a 420 px screen, with nothing wider than it.
func TestBrowserRefusedDeliveriesShowOnTheEventsAndServicesPages(t *testing.T) {
	browsertest.Parallel(t)
	db := dbtest.SQLite(t)
	b, _ := pagesServer(t, db, nil)
	seedDemoEvents(t, db, b.clock.Now())
	b.clock.Advance(4 * time.Minute)
	require.Equal(t, http.StatusUnauthorized, postRefused(t, b, b.clock.Now(), true))
	b.clock.Advance(time.Minute)
	b.user("sam@example.com", models.RoleViewer)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "sam@example.com")

	for _, page := range []struct{ path, name, ready string }{
		{"/events", "events", "events-table"},
		{"/services", "services", "service-stripe"},
	} {
		for _, width := range []int64{1280, 420} {
			require.NoError(t, chromedp.Do(ctx,
				chromedp.EmulateViewport(width, 900),
				chromedp.Navigate(b.srv.URL+page.path),
				chromedp.WaitVisible(testid(page.ready)),
				chromedp.WaitVisible(testid("refused-stripe")),
			))
			refused := textOf(t, ctx, testid("refused-stripe"))
			require.Contains(t, refused, "1 refused in the last 24 h, last 1 min ago: signature missing or did not match (check the webhook secret).",
				"%s at %d px", page.path, width)
			require.Contains(t, refused, "Its check said: stripe webhook: bad webhook signature: no v1 signature matches")
			good := textOf(t, ctx, testid("last-good-stripe"))
			require.Equal(t, "Last good delivery: 8 min ago", strings.TrimSpace(good), "%s at %d px", page.path, width)
			body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			require.NoError(t, err)
			require.NotContains(t, body, refusedMarker)
			scrollWidth, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
			require.NoError(t, err)
			require.LessOrEqual(t, scrollWidth, int(width), "%s is %d px wide on a %d px screen", page.path, scrollWidth, width)
			browsertest.Screenshot(ctx, t, fmt.Sprintf("refused-%s-%d", page.name, width))
		}
	}
}
