package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// An operator replays a payment that was applied when it arrived: the page
// still says it was applied, and the new row at the top of Replays says the
// replay found it already paid, under the operator's name. On a 420 px
// screen the history stacks instead of scrolling sideways.
func TestBrowserEventReplayHistory(t *testing.T) {
	browsertest.Parallel(t)
	db := dbtest.SQLite(t)
	b, rc := pagesServer(t, db, nil)
	b.clock.Advance(time.Now().UTC().Sub(b.clock.Now()))
	rc.Handle("stripe", "payment.succeeded", inbox.EffectSet("payments")["payment.succeeded"])
	now := b.clock.Now()
	payload, hash, err := models.CanonicalPayload([]byte(`{"amount":4200,"currency":"EUR","status":"paid"}`))
	require.NoError(t, err)
	require.NoError(t, db.Create(&models.Record{LocalType: "order", LocalID: "2290", Payload: payload, ContentHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
	require.NoError(t, db.Create(&models.Link{LocalType: "order", LocalID: "2290", ExternalService: "stripe", ExternalKey: "site_order_2290",
		ExternalID: "pay_2290", Status: models.StatusSuccess, NextAttemptAt: now, PushedHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
	ok, err := models.RecordEvent(db, models.ProcessedEvent{Provider: "stripe", EventID: "evt_1QpPaid", EventType: "payment.succeeded",
		ReceivedAt: now.Add(-3 * time.Hour), Outcome: models.EventApplied, Error: `payment pay_2290 set to "paid"`,
		Payload: `{"id":"evt_1QpPaid","type":"payment.succeeded","data":{"object":{"id":"pay_2290","external_key":"site_order_2290","status":"succeeded"}}}`})
	require.NoError(t, err)
	require.True(t, ok)
	b.user("olga@example.com", models.RoleOperator)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "olga@example.com")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/events/stripe/evt_1QpPaid"),
		chromedp.WaitVisible(testid("no-replays")),
		chromedp.Click(testid("replay")),
		chromedp.WaitVisible(testid("replay-row")),
	))
	require.NoError(t, models.RecordReplay(db, models.EventReplay{Provider: "stripe", EventID: "evt_1QpPaid",
		ReplayedAt: now.Add(-2 * time.Hour), ReplayedBy: "api:shop-backend", Outcome: models.EventIgnored,
		Note: `payment pay_2290 is already "paid"; nothing to change`}))
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(testid("replays-table"))))

	first := textOf(t, ctx, testid("event-outcome"))
	require.Contains(t, first, "Applied", "the first outcome stands")
	require.Contains(t, first, `payment pay_2290 set to "paid"`)
	row := textOf(t, ctx, testid("replay-row")) // the first one: the newest
	require.Contains(t, row, "olga@example.com")
	require.Contains(t, row, "Ignored")
	require.Contains(t, row, `is already "paid"`)
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="replay-row"]').length`))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	browsertest.Screenshot(ctx, t, "event-replays")

	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(420, 900), chromedp.Reload(), chromedp.WaitVisible(testid("replays-table"))))
	width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	require.NoError(t, err)
	require.LessOrEqual(t, width, 420, "the event page is %d px wide on a 420 px screen", width)
	fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const t = document.querySelector('[data-testid="replays-table"]');
		return t.scrollWidth <= t.parentElement.clientWidth;
	})()`))
	require.NoError(t, err)
	require.True(t, fits, "the replays stack inside their card instead of scrolling")
	browsertest.Screenshot(ctx, t, "event-replays-narrow")
}
