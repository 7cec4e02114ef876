package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/inbox"
)

var (
	replayRowRe    = regexp.MustCompile(`(?s)<tr data-testid="replay-row">(.*?)</tr>`)
	firstOutcomeRe = regexp.MustCompile(`(?s)<dd data-testid="event-outcome">(.*?)</dd>`)
)

// cellWords is an HTML fragment's words, each tag a space (so that table
// cells stay apart), spaces collapsed.
func cellWords(fragment string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(fragment, " "))), " ")
}

// A failed event, replayed from its page by an operator and then through the
// API: the page still gives the first outcome and note, and lists each
// replay, newest first, with who asked and what it did.
func TestEventPageShowsTheFirstOutcomeAndEachReplay(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rc := pagesServer(t, db, nil)
		runs := 0
		rc.Handle("stripe", "payment.succeeded", func(context.Context, *gorm.DB, inbox.Event, time.Time) (string, error) {
			runs++
			if runs == 1 {
				return "payment pay_1 marked paid", nil
			}
			return "", &inbox.UnprocessableError{Reason: "payment pay_1 was deleted at the provider"}
		})
		seedEvent(t, db, "stripe", "evt_1", "payment.succeeded", models.EventFailed, b.clock.Now().Add(-time.Hour))
		const page, replay = "/events/stripe/evt_1", "/events/stripe/evt_1/replay"

		op := b.signedIn("olga@example.com", models.RoleOperator)
		r := op.get(page)
		require.Contains(t, r.body, `data-testid="no-replays"`)
		require.Contains(t, r.body, "Not replayed.")

		r = op.post(page, replay, nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		b.clock.Advance(time.Minute)
		token, _, err := models.CreateAPIToken(db, "shop", "test", b.clock.Now())
		require.NoError(t, err)
		r = b.client().do(http.MethodPost, "/api/v1/events/stripe/evt_1/replay", nil, http.Header{"Authorization": {"Bearer " + token}})
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, r.body, `"outcome":"failed"`)

		r = b.signedIn("vera@example.com", models.RoleViewer).get(page)
		require.Equal(t, http.StatusOK, r.status)
		m := firstOutcomeRe.FindStringSubmatch(r.body)
		require.NotNil(t, m, "no first outcome on the page")
		require.Contains(t, cellWords(m[1]), "Failed note of evt_1", "the first outcome and note stand")
		require.Contains(t, r.body, "First outcome")
		require.NotContains(t, r.body, "Not replayed.")
		var rows []string
		for _, m := range replayRowRe.FindAllStringSubmatch(r.body, -1) {
			rows = append(rows, cellWords(m[1]))
		}
		require.Len(t, rows, 2, "one row per replay")
		require.Contains(t, rows[0], "api:shop ✕ Failed payment pay_1 was deleted at the provider", "newest first")
		require.Contains(t, rows[1], "olga@example.com ✓ Applied payment pay_1 marked paid")
		require.NotContains(t, r.body, `data-testid="older-replays"`)
	})
}

// Past 50 replays the page lists the newest 50 and says how many more the
// audit log has.
func TestEventPageCapsTheReplays(t *testing.T) {
	t.Parallel()
	b, _ := pagesServer(t, dbtest.SQLite(t), nil)
	seedEvent(t, b.db, "stripe", "evt/1", "payment.succeeded", models.EventApplied, b.clock.Now().Add(-time.Hour))
	for i := range eventReplaysShown + 7 {
		require.NoError(t, models.RecordReplay(b.db, models.EventReplay{Provider: "stripe", EventID: "evt/1",
			ReplayedAt: b.clock.Now().Add(time.Duration(i) * time.Second), ReplayedBy: fmt.Sprintf("op%02d@example.com", i),
			Outcome: models.EventIgnored}))
	}
	r := b.signedIn("vera@example.com", models.RoleViewer).get(eventURL("stripe", "evt/1"))
	require.Equal(t, http.StatusOK, r.status)
	rows := replayRowRe.FindAllStringSubmatch(r.body, -1)
	require.Len(t, rows, eventReplaysShown)
	require.Contains(t, cellWords(rows[0][1]), "op56@example.com", "the newest first")
	require.Contains(t, r.body, "And 7 older replays, not shown.")
	require.Contains(t, r.body, `href="/audit?action=event.replay&amp;target=stripe%2Fevt%2F1"`)
}
