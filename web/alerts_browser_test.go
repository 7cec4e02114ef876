package web

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// An operator opens Alerts from the menu, reads what is wrong and what to
// do, sees that one channel is being retried, and says they are on it.
func TestBrowserOperatorAcknowledgesAnIncident(t *testing.T) {
	browsertest.Parallel(t)
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleOperator)
	open, resolved := seedIncidents(t, b.db, b.clock.Now())
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")
	card := testid("incident-" + itoa(open))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`nav a[href="/alerts"]`),
		chromedp.WaitVisible(testid("open-incidents")),
	))
	require.Contains(t, textOf(t, ctx, card+" "+testid("incident-state")), "Open")
	require.Contains(t, textOf(t, ctx, card), "the receiver answered 503 Service Unavailable")
	over := testid("incident-" + itoa(resolved))
	require.Contains(t, textOf(t, ctx, over+" "+testid("incident-text")), "Nothing more to do for it.", "an incident over says how it ended")
	require.Contains(t, textOf(t, ctx, over+" "+testid("incident-text-then")), "While it was open it said: What to do about")
	browsertest.Screenshot(ctx, t, "alerts")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(card+" "+testid("acknowledge")),
		chromedp.WaitVisible(testid("flash")),
		chromedp.WaitVisible(card+" "+testid("acknowledged-by")),
	))
	require.Contains(t, textOf(t, ctx, card+" "+testid("acknowledged-by")), "Acknowledged by ana@example.com")
	require.Contains(t, textOf(t, ctx, card+" "+testid("incident-state")), "someone is on it")
	require.Contains(t, textOf(t, ctx, testid("flash")), "You are down as on it")
	require.EqualValues(t, 1, b.auditCount("incident.acknowledge", models.OutcomeSuccess))
}
