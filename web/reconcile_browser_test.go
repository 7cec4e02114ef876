package web

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/sandbox"
	"github.com/syncdesk/syncdesk/web/browsertest"
)

// The acceptance: start a run from the dashboard, watch the
// progress bar advance, open the report, download the CSV and find the
// discrepancies in it.
func TestBrowserReconcileRunProgressReportAndCSV(t *testing.T) {
	browsertest.Parallel(t)
	b, _ := reconcileServer(t, dbtest.SQLite(t), 0)
	b.seedOrders(1, 20)
	for _, n := range []int{3, 7, 11} {
		b.deleteRemote(n)
	}
	b.orphanRecord(40)
	b.orphanRecord(41)
	for range 1200 { // someone else's deals: listed, a page of 100 at a time, and not ours
		b.crm.Insert(map[string]any{"title": "someone else's deal"})
	}
	b.crm.SetOptions(sandbox.Options{Latency: 400 * time.Millisecond})
	b.clock.Advance(time.Second)
	b.user("ana@example.com", models.RoleOperator)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, b.srv.URL, "ana@example.com")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/reconcile"),
		chromedp.WaitVisible(testid("runs-empty")),
		chromedp.SetValue(testid("run-service"), "crm"),
		chromedp.Click(testid("run-start")),
		chromedp.WaitVisible(testid("run-progress-bar")),
	))

	// Read the bar until the run ends and the page reloads into the report.
	var seen []int
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
			const p = document.querySelector('[data-testid="run-progress-bar"]');
			return p && p.hasAttribute('value') ? Number(p.getAttribute('value')) : -1;
		})()`))
		if err == nil && v >= 0 && (len(seen) == 0 || v != seen[len(seen)-1]) {
			seen = append(seen, v)
			if len(seen) == 2 {
				browsertest.Screenshot(ctx, t, "reconcile-progress")
			}
		}
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
			`!!document.querySelector('[data-testid="run-summary"] [data-testid="run-status"][data-status="completed"]')`))
		if err == nil && done {
			break
		}
		time.Sleep(150 * time.Millisecond)
	}
	require.GreaterOrEqual(t, len(seen), 2, "the progress bar was seen advancing; values seen: %v", seen)
	for i := 1; i < len(seen); i++ {
		require.Greater(t, seen[i], seen[i-1], "the bar only moves forward: %v", seen)
	}

	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(testid("disc-table"))))
	table := textOf(t, ctx, testid("disc-table"))
	require.Contains(t, table, "Missing at the provider")
	require.Contains(t, table, "Never sent")
	require.Contains(t, textOf(t, ctx, testid("run-kinds")), "It is created again through the normal sending queue")
	browsertest.Screenshot(ctx, t, "reconcile-report")

	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const r = await fetch(document.querySelector('[data-testid="disc-csv"]').href);
		return r.headers.get('Content-Disposition') + '\n' + await r.text();
	})()`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	disposition, data, _ := strings.Cut(body, "\n")
	require.Contains(t, disposition, "attachment")
	rows, err := csv.NewReader(strings.NewReader(data)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, discrepancyCSVHeader, rows[0])
	kinds := map[string][]string{}
	for _, r := range rows[1:] {
		kinds[r[18]] = append(kinds[r[18]], r[6])
	}
	require.ElementsMatch(t, []string{"3", "7", "11"}, kinds[discrepancy.MissingRemote])
	require.ElementsMatch(t, []string{"40", "41"}, kinds[discrepancy.NeverSynced])

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/reconcile"), chromedp.WaitVisible(testid("runs-table"))))
	require.Contains(t, textOf(t, ctx, testid("runs-table")), "Completed")
	browsertest.Screenshot(ctx, t, "reconcile-runs")
}
