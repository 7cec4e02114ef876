package web

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// seedDemoEvents stores a realistic mix: payments applied, a refund that
// failed, ignored types, and re-deliveries.
func seedDemoEvents(t *testing.T, db *gorm.DB, now time.Time) {
	t.Helper()
	rows := []models.ProcessedEvent{
		{Provider: "stripe", EventID: "evt_1QpRefund", EventType: "charge.refunded", Outcome: models.EventFailed,
			Error: "payment pay_2291 is not paid, so it cannot be refunded", ReceivedAt: now.Add(-3 * time.Minute),
			Payload: `{"id":"evt_1QpRefund","type":"charge.refunded","data":{"object":{"id":"pay_2291","amount":4200,"customer_email":"[redacted]"}}}`},
		{Provider: "stripe", EventID: "evt_1QpPaid", EventType: "payment.succeeded", Outcome: models.EventApplied,
			Error: "payment pay_2290 marked paid", ReceivedAt: now.Add(-9 * time.Minute), Duplicates: 2,
			Payload: `{"id":"evt_1QpPaid","type":"payment.succeeded","data":{"object":{"id":"pay_2290"}}}`},
		{Provider: "stripe", EventID: "evt_1QpHello", EventType: "customer.created", Outcome: models.EventIgnored,
			Error: `no effect for events of type "customer.created"`, ReceivedAt: now.Add(-2 * time.Hour),
			Payload: `{"id":"evt_1QpHello","type":"customer.created"}`},
		{Provider: "crm", EventID: "wh_88121", EventType: "deal.updated", Outcome: models.EventApplied,
			Error: "deal D-1203 linked to order 12345", ReceivedAt: now.Add(-26 * time.Hour),
			Payload: `{"id":"wh_88121","type":"deal.updated"}`},
	}
	for _, ev := range rows {
		ok, err := models.RecordEvent(db, ev)
		require.NoError(t, err)
		require.True(t, ok)
	}
	dup := now.Add(-time.Minute)
	require.NoError(t, db.Model(&models.ProcessedEvent{}).Where("event_id = ?", "evt_1QpPaid").
		Update("last_duplicate_at", dup).Error)
}

// An operator opens the events page, filters to the failed ones, opens the
// failed refund, replays it once the cause is fixed, and sees the
// confirmation and the new outcome. Then the schedules page, as an admin.
func TestBrowserEventsReplayAndSchedules(t *testing.T) {
	browsertest.Parallel(t)
	db := dbtest.SQLite(t)
	sched, _ := testScheduler(t, db)
	b, rc := pagesServer(t, db, sched)
	// The scheduler keeps wall-clock times: bring the page's clock to them.
	b.clock.Advance(time.Now().UTC().Sub(b.clock.Now()))
	rc.Handle("stripe", "charge.refunded", func(context.Context, *gorm.DB, inbox.Event, time.Time) (string, error) {
		return "payment pay_2291 refunded", nil
	})
	seedDemoEvents(t, db, b.clock.Now())
	require.NoError(t, sched.RunNow(context.Background(), "prune-events"))
	require.NoError(t, sched.RunNow(context.Background(), "send"))
	require.Eventually(t, func() bool {
		return taskState(t, sched, "prune-events").Runs == 1 && taskState(t, sched, "send").Runs == 1
	}, 5*time.Second, 10*time.Millisecond)
	b.user("olga@example.com", models.RoleOperator)
	ctx := browsertest.New(t)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/events"),
		chromedp.WaitVisible(testid("sign-in")),
		chromedp.SendKeys(testid("email"), "olga@example.com"),
		chromedp.SendKeys(testid("password"), testPassword),
		chromedp.Click(testid("sign-in")),
		chromedp.WaitVisible(testid("events-table")),
	))
	browsertest.Screenshot(ctx, t, "events")
	require.Equal(t, 4, countRows(t, ctx))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/events/stripe/evt_1QpPaid"),
		chromedp.WaitVisible(testid("event-duplicates")),
	))
	dups, err := chromedp.Run(ctx, chromedp.Text(testid("event-duplicates")))
	require.NoError(t, err)
	require.Contains(t, dups, "Delivered 2 more times")
	browsertest.Screenshot(ctx, t, "event-duplicates")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/events"),
		chromedp.WaitVisible(testid("events-table")),
	))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(testid("filter-outcome"), models.EventFailed),
		chromedp.Click(testid("filter")),
		chromedp.WaitNotPresent(`a[href="/events/stripe/evt_1QpPaid"]`), // the applied payment is filtered out
		chromedp.WaitVisible(testid("events-table")),
	))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, loc, "outcome=failed", "filters live in the URL")
	require.Equal(t, 1, countRows(t, ctx))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(testid("event-link")),
		chromedp.WaitVisible(testid("replay")),
	))
	payload, err := chromedp.Run(ctx, chromedp.Text(testid("payload")))
	require.NoError(t, err)
	require.Contains(t, payload, `"amount": 4200`)
	browsertest.Screenshot(ctx, t, "event")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(testid("replay")),
		chromedp.WaitVisible(testid("flash")),
	))
	flash, err := chromedp.Run(ctx, chromedp.Text(testid("flash")))
	require.NoError(t, err)
	require.Contains(t, flash, "The event was replayed")
	outcome, err := chromedp.Run(ctx, chromedp.Text(testid("event-outcome")))
	require.NoError(t, err)
	require.Contains(t, outcome, "Failed", "the first outcome stands")
	replayed, err := chromedp.Run(ctx, chromedp.Text(testid("replay-row")))
	require.NoError(t, err)
	require.Contains(t, replayed, "olga@example.com")
	require.Contains(t, replayed, "Applied")
	require.Contains(t, replayed, "payment pay_2291 refunded")
	browsertest.Screenshot(ctx, t, "event-replayed")
	require.Equal(t, int64(1), b.auditCount("event.replay", models.OutcomeSuccess))

	// The schedules page, as an admin (the operator sees no Run now).
	b.user("root@example.com", models.RoleAdmin)
	b.clock.Advance(time.Now().UTC().Sub(b.clock.Now()))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(testid("logout")),
		chromedp.WaitVisible(testid("sign-in")),
		chromedp.Navigate(b.srv.URL+"/schedules"),
		chromedp.WaitVisible(testid("sign-in")),
		chromedp.SendKeys(testid("email"), "root@example.com"),
		chromedp.SendKeys(testid("password"), testPassword),
		chromedp.Click(testid("sign-in")),
		chromedp.WaitVisible(testid("schedules-table")),
		chromedp.Click(testid("run-send")),
		chromedp.WaitVisible(testid("flash")),
	))
	browsertest.Screenshot(ctx, t, "schedules")
	text, err := chromedp.Run(ctx, chromedp.Text(testid("schedules-table")))
	require.NoError(t, err)
	require.Contains(t, text, "Sends links that are due")
	require.Contains(t, text, "the database is read-only")
}

func countRows(t *testing.T, ctx context.Context) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, testid("event-row"))))
	require.NoError(t, err, "count event rows")
	return n
}
