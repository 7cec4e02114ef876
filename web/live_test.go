package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// livePollHeader is what htmx and static/js/live.js send with a live
// region's poll.
func livePollHeader(version string) http.Header {
	return http.Header{"Hx-Request": {"true"}, "Hx-Target": {"live"}, "X-Live-Version": {version}}
}

// orders upserts and sends orders from..to; an empty title is refused by
// the CRM for good, so those links fail.
func (b *bundle) orders(from, to int, title func(int) string) {
	b.t.Helper()
	for i := from; i <= to; i++ {
		_, err := b.eng.Upsert(context.Background(), "order", fmt.Sprint(i), []byte(fmt.Sprintf(`{"title":%q}`, title(i))))
		require.NoError(b.t, err)
	}
	require.NoError(b.t, b.eng.Drain(context.Background()))
	require.NoError(b.t, models.RefreshStats(b.db, b.clock.Now())) // as the refresh-stats task would
}

func titled(i int) string { return fmt.Sprintf("Order %d", i) }

// Each live page answers its poll with its live region alone, and a 204
// while that reads as the version the page holds; the poll has the page's
// sign-in check, and says what changed once something has.
func TestLivePagesAnswerTheirPolls(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.orders(1, 3, func(i int) string {
			if i == 3 {
				return ""
			}
			return titled(i)
		})
		group := failedGroupOf(t, db)
		vera := b.signedIn("vera@example.com", models.RoleViewer)
		for _, page := range []struct {
			path, want string
			change     func()
			after      string
		}{
			{"/", `data-key="total-crm" data-val="3"`, func() { b.orders(4, 4, titled) }, `data-key="total-crm" data-val="4"`},
			{"/failed", `data-key="group-` + group + `" data-val="1"`, func() { b.orders(5, 5, func(int) string { return "" }) },
				`data-key="group-` + group + `" data-val="2"`},
			{"/failed/group?g=" + url.QueryEscape(group), `data-testid="failed-links"`, func() { b.orders(6, 6, func(int) string { return "" }) },
				"order 6"},
			{"/services", `data-key="links-crm-success" data-val="`, func() { b.orders(7, 7, titled) }, `data-key="links-crm-success" data-val="4"`},
			{"/links", `data-testid="links-table"`, func() { b.orders(8, 8, titled) }, `data-testid="link-row-8"`},
			{"/links?status=failed", `data-testid="links-table"`, func() { b.orders(9, 9, func(int) string { return "" }) }, `data-testid="link-row-9"`},
			{"/events", `data-testid="empty-events"`, func() { b.hookEvent("evt_live_1") }, `evt_live_1`},
		} {
			full := vera.get(page.path)
			require.Equal(t, http.StatusOK, full.status, page.path)
			require.Contains(t, full.body, `id="live" class="live" data-live`, "%s has a live region", page.path)
			require.Contains(t, full.body, `hx-get="`+htmlAttr(page.path)+`"`, "%s polls its own address", page.path)

			r := vera.do(http.MethodGet, page.path, nil, livePollHeader(""))
			require.Equal(t, http.StatusOK, r.status, page.path)
			require.NotContains(t, r.body, "<html", "%s: a poll gets the region, not the page", page.path)
			require.NotContains(t, r.body, `id="live"`, "%s: the region's content, without its frame", page.path)
			require.Contains(t, r.body, page.want, page.path)
			version := r.header.Get("X-Live-Version")
			require.NotEmpty(t, version, page.path)
			require.Contains(t, full.body, `data-version="`+version+`"`, "%s: the page and its poll agree", page.path)

			r = vera.do(http.MethodGet, page.path, nil, livePollHeader(version))
			require.Equal(t, http.StatusNoContent, r.status, "%s: nothing changed, nothing to swap", page.path)
			require.Empty(t, r.body)

			page.change()
			r = vera.do(http.MethodGet, page.path, nil, livePollHeader(version))
			require.Equal(t, http.StatusOK, r.status, "%s: something changed", page.path)
			require.Contains(t, r.body, page.after, page.path)
			require.NotEqual(t, version, r.header.Get("X-Live-Version"), page.path)

			out := b.client().do(http.MethodGet, page.path, nil, livePollHeader(""))
			require.Equal(t, http.StatusUnauthorized, out.status, "%s: a poll needs a session", page.path)
			require.True(t, strings.HasPrefix(out.header.Get("HX-Redirect"), "/login"), page.path)
			require.NotContains(t, out.body, "order", page.path)
		}

		// An older page of a list is not live: new links would push its rows away.
		older := "/links?before=3"
		require.NotContains(t, vera.get(older).body, `id="live"`)
		require.Equal(t, http.StatusNoContent, vera.do(http.MethodGet, older, nil, livePollHeader("")).status)

		// The poll does not carry a flash's parameters, so it never says it again.
		require.Contains(t, vera.get("/failed?done=bulk-retry&queued=1&busy=0&gone=0").body, `hx-get="/failed"`)
	})
}

// htmlAttr escapes a path as templ writes it in an attribute.
func htmlAttr(s string) string { return strings.ReplaceAll(s, "&", "&amp;") }

func failedGroupOf(t *testing.T, db *gorm.DB) string {
	t.Helper()
	groups, err := models.FailedGroups(db, false, 0)
	require.NoError(t, err)
	require.Len(t, groups, 1)
	return groups[0].ErrorGroup
}

// hookEvent stores a webhook event as the inbox does, for the events list.
func (b *bundle) hookEvent(id string) {
	b.t.Helper()
	_, err := models.RecordEvent(b.db, models.ProcessedEvent{Provider: "crm", EventID: id, EventType: "deal.updated",
		Payload: "{}", Outcome: models.EventIgnored, ReceivedAt: b.clock.Now()})
	require.NoError(b.t, err)
}

// "Counted X ago" is the age of the counts the page shows, and counts the
// refresh-stats task has left for more than a minute are said to be late.
func TestCountedAgoIsTrue(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	b.orders(1, 2, titled)
	vera := b.signedIn("vera@example.com", models.RoleViewer)
	require.Contains(t, vera.get("/").body, `just now</time>; this page updates itself.`)

	b.clock.Advance(40 * time.Second)
	for _, path := range []string{"/", "/services"} {
		require.Contains(t, vera.get(path).body, `40 s ago</time>; this page updates itself.`, path)
	}
	b.clock.Advance(4 * time.Minute)
	body := vera.get("/").body
	require.Contains(t, body, `4 min ago</time>; counts are usually at most 10 s old`)
	require.Contains(t, body, `class="muted small warn-text" data-testid="counted-at"`)

	require.NoError(t, models.RefreshStats(b.db, b.clock.Now()))
	require.Contains(t, vera.get("/").body, `just now</time>; this page updates itself.`)
}

// A link's own page follows the link through its retries: its status cell
// polls while the link waits for its next try, and the page reloads once a
// send has changed the link — a retry that failed again, or the success.
func TestLinkPageFollowsItsRetries(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.crm.Script(sandbox.TooMany(time.Second), sandbox.TooMany(time.Second))
		b.orders(1, 1, titled)
		links, err := models.RecordLinks(db, "order", "1")
		require.NoError(t, err)
		l := links[0]
		require.Equal(t, models.StatusRetry, l.Status)
		id := fmt.Sprint(l.ID)
		ana := b.signedIn("ana@example.com", models.RoleOperator)

		page := ana.get("/links/" + id)
		require.Regexp(t, `data-status="retry"[^>]* data-live hx-get="/links/`+id+`/status\?v=`, page.body)
		require.Contains(t, page.body, `hx-trigger="every 5s, live"`, "a link waiting for its next try polls every 5 s")
		v := versionIn(t, page.body, id)
		onPage := http.Header{"Hx-Request": {"true"}, "Hx-Current-Url": {b.srv.URL + "/links/" + id}}

		r := ana.do(http.MethodGet, "/links/"+id+"/status?v="+v, nil, onPage)
		require.Equal(t, http.StatusOK, r.status)
		require.Empty(t, r.header.Get("HX-Refresh"), "nothing happened yet")
		require.Contains(t, r.body, `hx-trigger="every 5s, live"`)

		b.clock.Advance(time.Minute)
		require.NoError(t, b.eng.Drain(context.Background())) // the second 429
		r = ana.do(http.MethodGet, "/links/"+id+"/status?v="+v, nil, onPage)
		require.Contains(t, r.body, `data-status="retry"`)
		require.Equal(t, "true", r.header.Get("HX-Refresh"), "a send failed again since the page was drawn: its attempts changed")

		v = versionIn(t, ana.get("/links/"+id).body, id)
		b.clock.Advance(time.Minute)
		require.NoError(t, b.eng.Drain(context.Background()))
		r = ana.do(http.MethodGet, "/links/"+id+"/status?v="+v, nil, onPage)
		require.Contains(t, r.body, `data-status="success"`)
		require.Equal(t, "true", r.header.Get("HX-Refresh"))
		require.NotContains(t, ana.get("/links/"+id).body, "hx-trigger", "a synced link's page polls no more")

		// A list does not follow a retry: its own live region does.
		b.crm.Script(sandbox.TooMany(time.Second))
		b.orders(2, 2, titled)
		links, _ = models.RecordLinks(db, "order", "2")
		r = ana.do(http.MethodGet, fmt.Sprintf("/links/%d/status", links[0].ID), nil, http.Header{"Hx-Request": {"true"}})
		require.Contains(t, r.body, `data-status="retry"`)
		require.NotContains(t, r.body, "hx-trigger")
	})
}

func versionIn(t *testing.T, body, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `hx-get="/links/`+id+`/status?v=`)
	require.True(t, ok, "the status cell polls")
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// Queued links do not each ask for their state every second: in the list
// of links, which keeps up by itself, the list's region brings them up to
// date; on a record's page, which does not, each asks every LiveEvery. The
// link's own page still asks every second.
func TestListsOfQueuedLinksDoNotPollEachRowEverySecond(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		for i := 1; i <= 5; i++ {
			_, err := b.eng.Upsert(context.Background(), "order", fmt.Sprint(i), []byte(`{"title":"Order"}`))
			require.NoError(t, err)
		}
		ana := b.signedIn("ana@example.com", models.RoleOperator)

		list := ana.get("/links?status=new").body
		require.Equal(t, 5, strings.Count(list, `data-status="new"`), "five queued links listed")
		require.NotContains(t, list, "/status?v=", "no row polls on its own")
		require.Contains(t, list, `id="live"`, "the list keeps up by itself")

		record := ana.get("/records/order/1").body
		require.Regexp(t, `data-status="new"[^>]* data-live hx-get="/links/\d+/status\?v=`, record)
		require.Contains(t, record, `hx-trigger="every 5s, live"`)
		require.NotContains(t, record, "every 1s")

		links, err := models.RecordLinks(db, "order", "1")
		require.NoError(t, err)
		require.Contains(t, ana.get(fmt.Sprintf("/links/%d", links[0].ID)).body, `hx-trigger="every 1s, live"`)
	})
}
