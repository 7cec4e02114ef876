package views

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStateOfSaysWhatIsTrue(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 21, 58, 0, time.UTC)
	p := Page{Now: now, Viewer: Viewer{Email: "ana@example.com"}}
	paused := p
	paused.Paused = []PausedService{{Name: "crm"}}
	asked := LinkRow{Service: "crm", Status: "new", InProgressBy: "ana@example.com", InProgressAt: now}
	for _, c := range []struct {
		name  string
		p     Page
		r     LinkRow
		again bool
		key   string
		label string
		note  string
		busy  bool
	}{
		{"queued by you", p, asked, false, "new", "Queued", "by you at 08:21:58 UTC", true},
		{"asked again by you", p, asked, true, "new", "Queued", "already asked by you at 08:21:58 UTC", true},
		{"queued by another", p, LinkRow{Service: "crm", Status: "new", InProgressBy: "bo@example.com", InProgressAt: now}, false,
			"new", "Queued", "by bo@example.com at 08:21:58 UTC", true},
		{"paused and asked", paused, asked, false, "paused", "Paused", "asked by you at 08:21:58 UTC; crm is paused: it goes when resumed", true},
		{"paused retry", paused, LinkRow{Service: "crm", Status: "retry", NextAttemptAt: now.Add(time.Minute)}, false,
			"paused", "Paused", "crm is paused: the next try waits for the resume", false},
		{"another service paused", paused, LinkRow{Service: "pay", Status: "new"}, false, "new", "Queued", "", false},
		{"sending", p, LinkRow{Service: "crm", Status: "processing"}, false, "processing", "Sending", "", true},
		{"waiting for the next try", p, LinkRow{Service: "crm", Status: "retry", NextAttemptAt: now.Add(90 * time.Second)}, false,
			"retry", "Will retry", "next try at 08:23:28 UTC, in 1 min", false},
		{"retrying after an unknown outcome", p, LinkRow{Service: "pay", Status: "retry", NeedsLookup: true, NextAttemptAt: now.Add(90 * time.Second)}, false,
			"retry", "Will retry", "next try at 08:23:28 UTC, in 1 min; the last try's outcome is unknown", false},
		{"failed permanently", p, LinkRow{Service: "crm", Status: "failed", LastHTTP: 422, LastError: "HTTP 422: amount must be a positive integer"}, false,
			"failed", "Failed", "permanently: fix the data at the source", false},
		{"failed after temporary errors", p, LinkRow{Service: "crm", Status: "failed", LastHTTP: 503, Attempts: 8, LastError: "gave up after 8 attempts; last: HTTP 503"}, false,
			"failed", "Failed", "after 8 temporary errors: a retry may work", false},
		{"429 is not permanent", p, LinkRow{Service: "crm", Status: "failed", LastHTTP: 429, Attempts: 8, LastError: "gave up after 8 attempts; last: HTTP 429"}, false,
			"failed", "Failed", "after 8 temporary errors: a retry may work", false},
		{"put aside", p, LinkRow{Service: "crm", Status: "failed", LastHTTP: 422, PutAsideBy: "ana@example.com", PutAsideReason: "test order", PutAsideAt: now}, false,
			"aside", "Put aside", "by ana@example.com: test order", false},
	} {
		st := StateOf(c.p, c.r, c.again)
		require.Equal(t, c.key, st.Key, c.name)
		require.Equal(t, c.label, st.Label, c.name)
		require.Equal(t, c.note, st.Note, c.name)
		require.Equal(t, c.busy, st.Busy, c.name)
	}
	require.True(t, PermanentHTTP(422))
	require.False(t, PermanentHTTP(408))
	require.False(t, PermanentHTTP(429))
	require.False(t, PermanentHTTP(503))
}

// The answer to a Sync now asks for itself once more even when the send
// ended before the answer was written: the link's page then reloads, and no
// old error stays beside "Synced". A paused service's link does not poll.
func TestSyncAnswerPollsOnceEvenWhenTheSendHasEnded(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	p := Page{Now: now, Viewer: Viewer{Email: "ana@example.com", Role: "operator"}}
	render := func(c interface {
		Render(context.Context, io.Writer) error
	}) string {
		var b strings.Builder
		require.NoError(t, c.Render(context.Background(), &b))
		return b.String()
	}
	synced := LinkRow{ID: 1, Service: "crm", Status: "success"}
	require.NotContains(t, render(LinkStatusCell(p, synced, false)), "hx-trigger")
	require.Contains(t, render(LinkStatusAnswer(p, synced, false, true, false)), `hx-trigger="every 1s, live"`)
	require.NotContains(t, render(LinkStatusAnswer(p, synced, false, false, false)), "hx-trigger", "a poll's own answer stops when the sync has ended")
	p.Paused = []PausedService{{Name: "crm"}}
	require.NotContains(t, render(LinkStatusAnswer(p, LinkRow{ID: 1, Service: "crm", Status: "new"}, false, true, false)), "hx-trigger")
	// The link's own page asks every 5 s while it waits for the resume: a
	// resume made on another page shows there.
	require.Contains(t, render(LinkPageStatusCell(p, LinkRow{ID: 1, Service: "crm", Status: "new"})), `hx-trigger="every 5s, live"`)
}
