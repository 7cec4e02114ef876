package views

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// text is what a reader sees of rendered HTML: inline tags gone without a
// trace, other tags as a space, and the spaces between words one.
func text(html string) string {
	html = regexp.MustCompile(`</?(time|span|a|strong|em|code)\b[^>]*>`).ReplaceAllString(html, "")
	return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(html, " ")), " ")
}

// Newest failures say when each link failed, not when it was last written;
// a sync in progress reads "since 2 min ago, by scheduler", its comma
// against the time; the list says how many it leaves out.
func TestOverviewSaysWhenALinkFailedAndWhoStartedASync(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := Page{Title: "Overview", Now: now, Viewer: Viewer{Email: "ana@example.com"}}
	v := Overview{
		Failures: []LinkRow{{ID: 7, LocalType: "order", LocalID: "7", Service: "crm", Status: "failed", LastError: "HTTP 422: title is required",
			FailedAt: now.Add(-40 * time.Minute), UpdatedAt: now.Add(-10 * time.Second)}},
		InProgress:      []InProgressRow{{Service: "crm", LocalType: "order", LocalID: "9", By: "scheduler", Since: now.Add(-2 * time.Minute)}},
		InProgressTotal: 24,
	}
	var b strings.Builder
	require.NoError(t, OverviewPage(p, v).Render(context.Background(), &b))
	got := text(b.String())
	require.Contains(t, got, "order 7 crm HTTP 422: title is required 40 min ago")
	require.NotContains(t, got, "10 s ago")
	require.Contains(t, got, "order 9 → crm since 2 min ago, by scheduler")
	// Each sync names its record, a link to its page, and the count above
	// the list is not left unexplained when the list shows fewer.
	require.Contains(t, b.String(), `<a href="/records/order/9">order 9</a>`)
	require.Contains(t, got, "23 more being sent, not shown here. All links being sent →")
	require.NotContains(t, got, "Sync now")
	require.Contains(t, b.String(), `href="/links?status=processing"`)
}

// Sync now requests whose link waits its turn say so, in the list and in
// the count of those left out, which the list of links being sent does
// not show.
func TestOverviewTellsSyncNowRequestsWaitingTheirTurnApart(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := Page{Title: "Overview", Now: now, Viewer: Viewer{Email: "ana@example.com"}}
	v := Overview{
		InProgress: []InProgressRow{
			{Service: "crm", LocalType: "order", LocalID: "9", By: "ana@example.com", Since: now.Add(-3 * time.Minute), Waiting: true},
			{Service: "crm", LocalType: "order", LocalID: "10", By: "scheduler", Since: now.Add(-time.Minute)},
		},
		InProgressTotal:   7,
		InProgressWaiting: 4,
	}
	var b strings.Builder
	require.NoError(t, OverviewPage(p, v).Render(context.Background(), &b))
	got := text(b.String())
	require.Contains(t, got, "order 9 → crm asked 3 min ago by ana@example.com, waiting its turn")
	require.Contains(t, got, "order 10 → crm since 1 min ago, by scheduler")
	require.Contains(t, got, "2 more being sent, not shown here. All links being sent → 3 more asked for with Sync now, waiting their turn in the queue.")

	v.InProgressTotal = 5 // every one left out is a request
	b.Reset()
	require.NoError(t, OverviewPage(p, v).Render(context.Background(), &b))
	got = text(b.String())
	require.Contains(t, got, "3 more asked for with Sync now, waiting their turn in the queue.")
	require.NotContains(t, got, "being sent, not shown")
}

// A list that shows every sync in progress says nothing more.
func TestOverviewSaysNoMoreWhenTheListIsWhole(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := Page{Title: "Overview", Now: now, Viewer: Viewer{Email: "ana@example.com"}}
	v := Overview{
		InProgress:      []InProgressRow{{Service: "crm", LocalType: "order", LocalID: "9", By: "scheduler", Since: now.Add(-time.Minute)}},
		InProgressTotal: 1,
	}
	var b strings.Builder
	require.NoError(t, OverviewPage(p, v).Render(context.Background(), &b))
	require.NotContains(t, b.String(), "in-progress-more")
}

// A service never reconciled says so across the whole row: the cell spans
// every column after the service's, whatever the count columns are.
func TestOverviewNeverReconciledSpansTheRow(t *testing.T) {
	p := Page{Title: "Overview", Now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Viewer: Viewer{Email: "ana@example.com"}}
	v := Overview{Reconciliation: []ReconcileSummary{{Service: "crm"}}}
	var b strings.Builder
	require.NoError(t, OverviewPage(p, v).Render(context.Background(), &b))
	html := b.String()
	table := html[strings.Index(html, `data-testid="reconcile-summary"`):]
	table = table[:strings.Index(table, "</table>")]
	heads := strings.Count(table[:strings.Index(table, "</thead>")], "<th ")
	require.Equal(t, 8, heads, "service, last run, outcome, found and the four counts")
	require.Regexp(t, `data-testid="reconcile-crm"><th scope="row">crm</th><td colspan="7" class="muted">Never reconciled`, table)
}
