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
// against the time.
func TestOverviewSaysWhenALinkFailedAndWhoStartedASync(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := Page{Title: "Overview", Now: now, Viewer: Viewer{Email: "ana@example.com"}}
	v := Overview{
		Failures: []LinkRow{{ID: 7, LocalType: "order", LocalID: "7", Service: "crm", Status: "failed", LastError: "HTTP 422: title is required",
			FailedAt: now.Add(-40 * time.Minute), UpdatedAt: now.Add(-10 * time.Second)}},
		InProgress:      []InProgressRow{{Service: "crm", LocalType: "order", LocalID: "9", By: "scheduler", Since: now.Add(-2 * time.Minute)}},
		InProgressTotal: 1,
	}
	var b strings.Builder
	require.NoError(t, OverviewPage(p, v).Render(context.Background(), &b))
	got := text(b.String())
	require.Contains(t, got, "order 7 crm HTTP 422: title is required 40 min ago")
	require.NotContains(t, got, "10 s ago")
	require.Contains(t, got, "order 9 → crm since 2 min ago, by scheduler")
}
