package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// seedLinks inserts n order links in crm: every third failed with one of two
// causes, the rest synced; then it counts the aggregates, as the
// refresh-stats task would.
func (b *bundle) seedLinks(n int) {
	b.t.Helper()
	now := b.clock.Now()
	for i := 1; i <= n; i++ {
		l := models.Link{LocalType: "order", LocalID: fmt.Sprint(i), ExternalService: "crm", ExternalKey: fmt.Sprintf("site_order_%d", i),
			ExternalID: fmt.Sprintf("deal_%d", i), Status: models.StatusSuccess, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
		if i%3 == 0 {
			l.ExternalID, l.Status, l.LastHTTPCode = "", models.StatusFailed, 422
			l.LastError = fmt.Sprintf("HTTP 422: title %d is too long", i)
			if i%2 == 0 {
				l.LastHTTPCode, l.LastError = 404, fmt.Sprintf("HTTP 404: no deal deal_%d", i)
			}
			l.ErrorGroup = models.ErrorGroup("crm", l.LastHTTPCode, l.LastError)
		}
		require.NoError(b.t, b.db.Create(&l).Error)
	}
	require.NoError(b.t, models.RefreshStats(b.db, now))
}

var rowID = regexp.MustCompile(`data-testid="link-row-(\d+)"`)

func rowIDs(body string) []string {
	var out []string
	for _, m := range rowID.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestLinksListFiltersSearchAndPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(120)
		c := b.signedIn("vic@example.com", models.RoleViewer)

		r := c.get("/links")
		require.Equal(t, http.StatusOK, r.status)
		first := rowIDs(r.body)
		require.Len(t, first, linksPageSize)
		require.Equal(t, "120", first[0], "newest first")
		require.NotContains(t, r.body, "Sync now", "a viewer sees no action buttons")

		next := regexp.MustCompile(`href="(/links\?before=\d+)"`).FindStringSubmatch(r.body)
		require.NotNil(t, next)
		r = c.get(strings.ReplaceAll(next[1], "&amp;", "&"))
		second := rowIDs(r.body)
		require.Len(t, second, linksPageSize)
		require.Equal(t, "70", second[0], "the next page starts where the first ended")

		r = c.get("/links?status=failed&service=crm")
		ids := rowIDs(r.body)
		require.Len(t, ids, 40)
		require.Contains(t, r.body, `<option value="failed" selected>`, "filters stay in the form and the URL")

		r = c.get("/links?q=deal_7")
		require.Len(t, rowIDs(r.body), 1, "search by external id")
		r = c.get("/links?q=site_order_9")
		require.Len(t, rowIDs(r.body), 1, "search by external key")
		r = c.get("/links?q=11")
		require.Len(t, rowIDs(r.body), 1, "search by local id")
		for _, typed := range []string{"+11", "11+", "order+11", "Order++11+", "+order+11"} {
			r = c.get("/links?q=" + typed)
			require.Equal(t, []string{"11"}, rowIDs(r.body), "search %q: spaces trimmed, and a type before the id as the table shows it", typed)
		}
		require.Contains(t, c.get("/links?q=+11+").body, `value="11"`, "the search box keeps the trimmed text")
		require.Empty(t, rowIDs(c.get("/links?q=lead+11").body), "a word that is no routed type is part of the search")
		require.Empty(t, rowIDs(c.get("/links?q=order+11&type=lead").body), "the type typed and the type filter disagree: nothing matches")
		require.Contains(t, c.get("/links").body, "whole id or key", "the search box says it matches whole ids")
		r = c.get("/links?class=permanent&q=nothing")
		require.Contains(t, r.body, "No links match these filters")

		require.Equal(t, http.StatusBadRequest, c.get("/links?status=lost").status)
		r = c.get("/links?class=bogus")
		require.Equal(t, http.StatusBadRequest, r.status, "an unknown error kind is refused like an unknown status, not ignored")
		require.Contains(t, r.body, "There is no error kind called")
		require.Equal(t, http.StatusBadRequest, c.get("/links?before=x").status)
	})
}

func TestSyncNowFromThePageIsDebouncedAndTheStatusUpdatesItself(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		_, err := b.eng.Upsert(context.Background(), "order", "7", []byte(`{"title":"Order 7"}`))
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(context.Background()))
		links, _ := models.RecordLinks(db, "order", "7")
		id := fmt.Sprint(links[0].ID)
		ana := b.signedIn("ana@example.com", models.RoleOperator)
		bo := b.signedIn("bo@example.com", models.RoleOperator)
		htmx := http.Header{"Hx-Request": {"true"}}
		before := b.crm.Requests().Total

		form := url.Values{"_csrf": {ana.csrf("/links/" + id)}}
		r := ana.do(http.MethodPost, "/links/"+id+"/sync", form, htmx)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, r.body, "Queued</span>", "the badge says what the note says: queued, not \"to send\" beside \"in progress\"")
		require.Contains(t, r.body, ">by you at 12:00:00 UTC<")
		require.Contains(t, r.body, `hx-trigger="every 1s, live"`, "the cell polls until the sync ends")
		require.Regexp(t, `hx-swap-oob="outerHTML"><input[^>]*><button[^>]*data-testid="sync-`+id+`" disabled`, r.body,
			"the Sync now button beside the cell is disabled while the sync is asked for")

		// The same person again (another tab, a stale list): "by you", in UTC.
		r = ana.do(http.MethodPost, "/links/"+id+"/sync", form, htmx)
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, ">already asked by you at 12:00:00 UTC<")

		form = url.Values{"_csrf": {bo.csrf("/links/" + id)}}
		r = bo.do(http.MethodPost, "/links/"+id+"/sync", form, htmx)
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, ">already asked by ana@example.com at 12:00:00 UTC<")

		require.NoError(t, b.eng.Drain(context.Background()))
		require.Equal(t, before+1, b.crm.Requests().Total, "three clicks, one send")
		r = ana.get("/links/" + id + "/status")
		require.Contains(t, r.body, `data-status="success"`)
		require.NotContains(t, r.body, "hx-trigger", "polling stops when the sync has ended")
		require.NotRegexp(t, `data-testid="sync-`+id+`" disabled`, r.body, "and the button is enabled again")
	})
}

// A link whose service keeps nothing from making a second object (no
// lookup, no idempotency key; or only a search that can lag) is not told
// the next attempt is safe: the note says it may not be, in the Services
// page's words, and what to check.
func TestLinkDetailWarnsWhereNothingGuardsAgainstASecondObject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, lookup, consistency, words string
	}{
		{"no lookup, no key", "", "", "none: a lost answer may become a second object"},
		{"a search that can lag", "GET /deals?external_key={external_key}", "eventual", "only a search that can lag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setupSQLite(t)
			svc := b.cfg.Services["crm"]
			o := svc.Objects["order"]
			o.Lookup, o.LookupConsistency = tc.lookup, tc.consistency
			svc.Objects = map[string]config.Object{"order": o}
			b.cfg.Services["crm"] = svc // the server reads the same map
			now := b.clock.Now()
			l := models.Link{LocalType: "order", LocalID: "5", ExternalService: "crm", ExternalKey: "site_order_5", Status: models.StatusRetry,
				NeedsLookup: true, IdempotencyKey: "order-5-create", Attempts: 1, LastError: "no answer within 5s",
				NextAttemptAt: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}
			require.NoError(t, b.db.Create(&l).Error)
			require.NoError(t, b.db.Create(&models.Attempt{LinkID: l.ID, Number: 1, Operation: "deal.create", IdempotencyKey: "order-5-create",
				Outcome: models.OutcomeAmbiguous, Error: l.LastError, CreatedAt: now}).Error)

			body := b.signedIn("ana@example.com", models.RoleOperator).get(fmt.Sprintf("/links/%d", l.ID)).body
			text := pageText(body)
			require.Contains(t, text, "Nothing keeps crm from making a second object here ("+tc.words)
			require.Contains(t, text, "Check whether crm holds an object with our key site_order_5")
			require.NotContains(t, text, "instead of creating a second one")
			require.NotContains(t, text, "honours idempotency keys")
		})
	}
}

func TestLinkDetailExplainsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	now := b.clock.Now()
	l := models.Link{LocalType: "order", LocalID: "5", ExternalService: "crm", ExternalKey: "site_order_5", Status: models.StatusRetry,
		NeedsLookup: true, IdempotencyKey: "order-5-create", Attempts: 1, LastError: "no answer within 5s (the request was sent; whether it took effect is unknown)",
		NextAttemptAt: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.db.Create(&l).Error)
	payload, hash, _ := models.CanonicalPayload([]byte(`{"title":"Order 5","customer":{"email":"ana@example.com","password":"pw-123456"}}`))
	require.NoError(t, b.db.Create(&models.Record{LocalType: "order", LocalID: "5", Payload: payload, ContentHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
	require.NoError(t, b.db.Create(&models.Attempt{LinkID: l.ID, Number: 1, Operation: "deal.create", IdempotencyKey: "order-5-create",
		Outcome: models.OutcomeAmbiguous, Error: l.LastError, RequestExcerpt: "POST /deals", CreatedAt: now}).Error)

	c := b.signedIn("ana@example.com", models.RoleOperator)
	r := c.get(fmt.Sprintf("/links/%d", l.ID))
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.body, "The last attempt's outcome is unknown")
	require.Contains(t, r.body, "looks the object up by its key <code>site_order_5</code> first")
	require.Contains(t, r.body, "<code>order-5-create</code>")
	require.Contains(t, r.body, "Unknown outcome")
	require.Contains(t, r.body, `data-testid="no-answer">No answer came back.</p>`, "the attempt's answer box says there was none")
	require.NotContains(t, r.body, "pw-123456", "the payload is redacted")
	require.NotContains(t, r.body, "ana@example.com\"", "personal data is redacted")

	r = c.get("/records/order/5")
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.body, `href="/links/1"`, "the record page lists its links")
	require.NotContains(t, r.body, "pw-123456")
}

func TestMarkFailedAndRecreate(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(3)
		c := b.signedIn("ana@example.com", models.RoleOperator)
		require.NoError(t, db.Model(&models.Link{}).Where("id = 1").Update("status", models.StatusRetry).Error)
		r := c.post("/links/1", "/links/1/fail", url.Values{"reason": {"customer cancelled"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		l, _ := models.LinkByID(db, 1)
		require.Equal(t, models.StatusFailed, l.Status)
		require.Equal(t, "Marked failed by ana@example.com: customer cancelled", l.LastError)

		r = c.post("/links/2", "/links/2/recreate", nil)
		require.Equal(t, http.StatusBadRequest, r.status, "only a link deleted remotely can be re-created")

		now := b.clock.Now()
		require.NoError(t, db.Model(&models.Link{}).Where("id = 2").Updates(map[string]any{"remote_deleted_at": now, "status": models.StatusFailed}).Error)
		require.Contains(t, c.get("/links/2").body, `data-testid="recreate"`)
		require.NoError(t, models.RefreshFailedGroups(db, now))
		require.Contains(t, c.get("/failed").body, "Failed (3)", "links 1, 2 and 3")
		r = c.post("/links/2", "/links/2/recreate", nil)
		require.Equal(t, http.StatusSeeOther, r.status)
		l, _ = models.LinkByID(db, 2)
		require.Equal(t, models.StatusNew, l.Status)
		require.Contains(t, c.get("/failed").body, "Failed (2)", "the link left Failed at once, not at the next count")
		require.Empty(t, l.ExternalID)
		require.Nil(t, l.RemoteDeletedAt)
		require.NotEqual(t, "order-2-create", l.IdempotencyKey, "a genuinely new create gets a new key")
		require.EqualValues(t, 1, b.auditCount("link.recreate", models.OutcomeSuccess))
	})
}

// The failed page counts from maintained groups; an operator's retry or
// "mark as failed" on one link shows there at once, not at the next count.
func TestFailedCountsFollowOneLinkRetriedOrMarkedFailed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(60) // 20 failed: links 3, 6, 9, …
		c := b.signedIn("ana@example.com", models.RoleOperator)
		require.Contains(t, c.get("/failed").body, "20 failed links in 2 groups")

		r := c.post("/links/3", "/links/3/sync", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Contains(t, c.get("/failed").body, "19 failed links in 2 groups", "a retried link leaves the count")

		r = c.post("/links/3", "/links/3/fail", url.Values{"reason": {"customer cancelled"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		body := c.get("/failed").body
		require.Contains(t, body, "20 failed links in 3 groups", "a link marked failed joins the count, in its own group")
		require.Contains(t, body, "marked failed by an operator")

		r = c.post("/links/2", "/links/2/sync", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Contains(t, c.get("/failed").body, "20 failed links in 3 groups", "a link that was not failed changes nothing")
	})
}

func TestBulkRetryShowsTheCountAndRetriesExactlyThose(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(60) // 20 failed: 10 with a 422, 10 with a 404
		c := b.signedIn("ana@example.com", models.RoleOperator)
		r := c.get("/failed")
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, "20 failed links in 2 groups")
		require.Contains(t, r.body, "crm · HTTP 404 · no deal ID")

		group := models.ErrorGroup("crm", 404, "HTTP 404: no deal deal_6")
		r = c.post("/failed", "/failed/retry", url.Values{"group": {group}})
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, "Retry 10 failed links?")
		ids := regexp.MustCompile(`name="id" value="(\d+)"`).FindAllStringSubmatch(r.body, -1)
		require.Len(t, ids, 10)

		// A link of the group that fails after the confirmation was shown is not retried with it.
		now := b.clock.Now()
		require.NoError(t, db.Create(&models.Link{LocalType: "order", LocalID: "late", ExternalService: "crm", ExternalKey: "k",
			Status: models.StatusFailed, ErrorGroup: group, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}).Error)
		form := url.Values{}
		for _, m := range ids {
			form.Add("id", m[1])
		}
		r = c.post("/failed", "/failed/retry/confirm", form)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		var queued, stillFailed int64
		db.Model(&models.Link{}).Where("status = ?", models.StatusNew).Count(&queued)
		db.Model(&models.Link{}).Where("status = ? AND error_group = ?", models.StatusFailed, group).Count(&stillFailed)
		require.EqualValues(t, 10, queued, "exactly the confirmed links")
		require.EqualValues(t, 1, stillFailed, "the late one stays failed")
		require.Contains(t, c.get("/failed").body, "11 failed links in 2 groups", "the page counts again after a bulk retry")

		// A forged or stale id among real ones does not stop the retry half way.
		r = c.post("/failed", "/failed/retry/confirm", url.Values{"id": {"3", "999999", "9"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		var entry models.AuditEntry
		require.NoError(t, db.Where("action = ?", "link.bulk_retry").Order("id DESC").Take(&entry).Error)
		require.Equal(t, "3 links, ids 3, 999999, 9; queued 2, already in progress 0, no longer there 1", entry.Detail)
		require.Equal(t, "3 links", entry.Target, "a selection names no group")
		require.Equal(t, "/failed?done=bulk-retry&queued=2&busy=0&gone=1", r.header.Get("Location"), "the redirect carries the counts")
		body := c.get(r.header.Get("Location")).body
		require.Contains(t, body, "2 links are queued to be sent again")
		require.Contains(t, body, "1 link was no longer there.")
		require.Contains(t, body, `src="/static/js/flash.js`, "the script that drops ?done= from the address bar")
		for _, forged := range []string{"queued=-1&busy=0&gone=0", "queued=9999999&busy=0&gone=0", "queued=x&busy=0&gone=0", "queued=2"} {
			require.NotContains(t, c.get("/failed?done=bulk-retry&"+forged).body, `data-testid="flash"`, "counts %q are not shown", forged)
		}

		viewer := b.signedIn("vic@example.com", models.RoleViewer)
		require.NotContains(t, viewer.get("/failed").body, "Retry all")
		require.Equal(t, http.StatusForbidden, viewer.post("/failed", "/failed/retry/confirm", form).status)
	})
}

// A full last page offers no older page: the list reads one row more than a
// page to know. A page past the end says so and leads back to the newest,
// instead of saying that there are no links at all.
func TestLinksPagerStopsAtAFullLastPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(2 * linksPageSize)
		c := b.signedIn("vic@example.com", models.RoleViewer)

		r := c.get("/links?service=crm")
		require.Len(t, rowIDs(r.body), linksPageSize)
		next := regexp.MustCompile(`href="([^"]+)" class="btn" data-testid="links-next"`).FindStringSubmatch(r.body)
		require.NotNil(t, next, "a second page follows")
		require.NotContains(t, r.body, `data-testid="pager-newest"`, "the first page needs no way back")

		r = c.get(strings.ReplaceAll(next[1], "&amp;", "&"))
		require.Len(t, rowIDs(r.body), linksPageSize)
		require.NotContains(t, r.body, `data-testid="links-next"`, "the full last page offers no older links")
		require.Contains(t, r.body, `href="/links?service=crm" class="btn btn-quiet" data-testid="pager-newest"`)

		r = c.get("/links?service=crm&before=1")
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, "No older links")
		require.NotContains(t, r.body, "No links yet")
		require.Contains(t, r.body, `href="/links?service=crm" data-testid="pager-newest"`)
	})
}

// The audit log and the runs list page the same way.
func TestAuditAndRunsPagersStopAtAFullLastPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		var n int64
		require.NoError(t, db.Model(&models.AuditEntry{}).Count(&n).Error)
		for i := n; i < auditPageSize; i++ {
			require.NoError(t, db.Create(&models.AuditEntry{At: b.clock.Now(), Actor: "root@example.com",
				Action: "user.add", Target: fmt.Sprint(i), Outcome: models.OutcomeSuccess}).Error)
		}
		r := admin.get("/audit")
		require.Equal(t, auditPageSize, strings.Count(r.body, `class="outcome outcome-`))
		require.NotContains(t, r.body, "Older entries", "exactly one page of entries")
		r = admin.get("/audit?before=1")
		require.Contains(t, r.body, "No older entries")
		require.NotContains(t, r.body, "No audit entries match these filters")

		for range runsPageSize {
			seedRun(t, db, b.clock.Now(), 0)
		}
		r = admin.get("/reconcile")
		require.Equal(t, runsPageSize, strings.Count(r.body, `data-testid="run-row-`))
		require.NotContains(t, r.body, `data-testid="runs-next"`, "exactly one page of runs")
		r = admin.get("/reconcile?before=1")
		require.Contains(t, r.body, "No older runs")
		require.Contains(t, r.body, `href="/reconcile" data-testid="pager-newest"`)
	})
}

// syncForm is the Sync now / Retry form of a link: its action and its own CSRF field.
var syncForm = regexp.MustCompile(`(?s)<form id="sync-form-\d+" method="post" action="(/links/\d+/sync)"[^>]*>\s*<input type="hidden" name="_csrf" value="([^"]+)"`)

// Sync now and Retry work as plain forms too, without htmx: the form carries
// its CSRF token instead of relying on htmx's header.
func TestSyncNowAsAPlainFormPost(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(3) // link 3 failed
		ana := b.signedIn("ana@example.com", models.RoleOperator)
		for _, page := range []string{"/links/3", "/links"} {
			m := syncForm.FindStringSubmatch(ana.get(page).body)
			require.NotNil(t, m, "the Sync now / Retry form on %s carries no CSRF field", page)
			r := ana.do(http.MethodPost, m[1], url.Values{"_csrf": {m[2]}}, nil)
			require.Equal(t, http.StatusSeeOther, r.status, "plain post from %s: %s", page, r.body)
			require.Regexp(t, `^/links/\d+$`, r.header.Get("Location"))
		}
		l, err := models.LinkByID(db, 3)
		require.NoError(t, err)
		require.Equal(t, models.StatusNew, l.Status, "the failed link is queued again")
	})
}

var fromGroup = regexp.MustCompile(`name="from_group" value="([^"]+)"`)

// Retry selected with nothing ticked shows the group again with the reason
// above it, not a bare error page.
func TestRetrySelectedWithNothingTickedShowsTheGroupAgain(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(12) // 4 failed: 3, 9 with a 422; 6, 12 with a 404
		c := b.signedIn("ana@example.com", models.RoleOperator)
		group := models.ErrorGroup("crm", 404, "HTTP 404: no deal deal_6")
		page := "/failed/group?g=" + url.QueryEscape(group)
		m := fromGroup.FindStringSubmatch(c.get(page).body)
		require.NotNil(t, m, "the form says which group it lists")

		r := c.post(page, "/failed/retry", url.Values{"from_group": {html.UnescapeString(m[1])}})
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, `data-testid="retry-error"`)
		require.Contains(t, r.body, "Nothing was selected")
		require.Equal(t, 2, strings.Count(r.body, `type="checkbox" name="id"`), "the group's links are listed again to pick from")
		require.Contains(t, r.body, `data-testid="retry-selected"`)
		// The page keeps up by asking the group's address, not the form's,
		// which answers a poll with 405.
		require.Contains(t, r.body, `hx-get="`+html.EscapeString(page)+`"`)
		require.NotContains(t, r.body, `hx-get="/failed/retry"`)

		// A whole group emptied meanwhile says so on the group's page too.
		require.NoError(t, db.Model(&models.Link{}).Where("error_group = ?", group).Update("status", models.StatusNew).Error)
		r = c.post("/failed", "/failed/retry", url.Values{"group": {group}})
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, "No failed links are left in this group")
	})
}

// Mark failed is offered only on links waiting to be sent or retried, and
// the server refuses it on a synced link with a reason a person can read.
func TestMarkFailedOnlyForLinksWaitingToBeSent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(3) // 1, 2 synced; 3 failed
		require.NoError(t, db.Model(&models.Link{}).Where("id = 2").Update("status", models.StatusRetry).Error)
		c := b.signedIn("ana@example.com", models.RoleOperator)
		require.NotContains(t, c.get("/links/1").body, `data-testid="mark-failed"`, "not on a synced link")
		require.NotContains(t, c.get("/links/3").body, `data-testid="mark-failed"`, "not on a failed link")
		require.Contains(t, c.get("/links/2").body, `data-testid="mark-failed"`, "on a link waiting to be retried")

		r := c.post("/links/2", "/links/1/fail", url.Values{"reason": {"oops"}})
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, "This link is synced")
		l, err := models.LinkByID(db, 1)
		require.NoError(t, err)
		require.Equal(t, models.StatusSuccess, l.Status, "a synced link stays synced")
		require.Equal(t, int64(1), b.auditCount("link.mark_failed", models.OutcomeDenied))

		r = c.post("/links/2", "/links/3/fail", url.Values{"reason": {"again"}})
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, "already failed")
		require.Equal(t, int64(2), b.auditCount("link.mark_failed", models.OutcomeDenied))

		r = c.post("/links/2", "/links/999/fail", url.Values{"reason": {"gone"}})
		require.Equal(t, http.StatusNotFound, r.status, "a link that is not there")
	})
}

// When a sync started from a link's own page ends, the polled status asks
// htmx to reload the page, so that the last error, the attempts and the
// buttons are those of now; the links list only swaps the cell.
func TestLinkPageReloadsWhenItsSyncEnds(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		_, err := b.eng.Upsert(context.Background(), "order", "7", []byte(`{"title":"Order 7"}`))
		require.NoError(t, err)
		links, _ := models.RecordLinks(db, "order", "7")
		id := fmt.Sprint(links[0].ID)
		ana := b.signedIn("ana@example.com", models.RoleOperator)
		onPage := func(path string) http.Header {
			return http.Header{"Hx-Request": {"true"}, "Hx-Current-Url": {b.srv.URL + path}}
		}

		r := ana.do(http.MethodGet, "/links/"+id+"/status", nil, onPage("/links/"+id))
		require.Contains(t, r.body, `hx-trigger="every 1s, live"`, "still waiting to be sent")
		require.Empty(t, r.header.Get("HX-Refresh"), "no reload while the sync goes on")

		require.NoError(t, b.eng.Drain(context.Background()))
		r = ana.do(http.MethodGet, "/links/"+id+"/status", nil, onPage("/links/"+id+"?done=link-failed"))
		require.Contains(t, r.body, `data-status="success"`)
		require.Equal(t, "true", r.header.Get("HX-Refresh"), "the link's page reloads once its sync has ended")

		r = ana.do(http.MethodGet, "/links/"+id+"/status", nil, onPage("/links?status=new"))
		require.Contains(t, r.body, `data-status="success"`)
		require.Empty(t, r.header.Get("HX-Refresh"), "the list swaps the cell alone")
	})
}

// A link synced at its second try: the list's count is labelled as the
// count of this round (0 once synced), and the link's page adds how many
// attempts the log holds in all, so "0" never contradicts the history.
func TestAttemptCountsSayWhatTheyCount(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.crm.SetOptions(sandbox.Options{RateValidation: 1})
		_, err := b.eng.Upsert(context.Background(), "order", "1", []byte(`{"title":"Order 1"}`))
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(context.Background()))
		b.crm.SetOptions(sandbox.Options{})
		links, _ := models.RecordLinks(db, "order", "1")
		_, err = b.eng.SyncNow(context.Background(), links[0].ID, "ana@example.com")
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(context.Background()))
		c := b.signedIn("vic@example.com", models.RoleViewer)

		list := pageText(c.get("/links").body)
		require.Contains(t, list, "Tries this round")
		require.NotContains(t, list, "Attempts", "a bare 'Attempts 0' beside a history of 2")
		detail := pageText(c.get(fmt.Sprintf("/links/%d", links[0].ID)).body)
		require.Contains(t, detail, "0 this round (since the last success or retry) · 2 in all, listed below")
	})
}

// Attempts are numbered across the whole history on a link's page, newest
// highest, with a heading where each round begins: the log's own numbers
// start again at 1 each round, which read as duplicates.
func TestLinkPageNumbersAttemptsAcrossRounds(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.crm.SetOptions(sandbox.Options{RateValidation: 1})
		_, err := b.eng.Upsert(context.Background(), "order", "1", []byte(`{"title":"Order 1"}`))
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(context.Background()))
		links, _ := models.RecordLinks(db, "order", "1")
		_, err = b.eng.SyncNow(context.Background(), links[0].ID, "ana@example.com")
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(context.Background()))
		b.crm.SetOptions(sandbox.Options{})
		_, err = b.eng.SyncNow(context.Background(), links[0].ID, "ana@example.com")
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(context.Background()))
		c := b.signedIn("vic@example.com", models.RoleViewer)

		body := c.get(fmt.Sprintf("/links/%d", links[0].ID)).body
		attempts := regexp.MustCompile(`#(\d+) deal\.create`).FindAllStringSubmatch(body, -1)
		var numbers []string
		for _, m := range attempts {
			numbers = append(numbers, m[1])
		}
		require.Equal(t, []string{"3", "2", "1"}, numbers, "numbered across rounds, newest first")
		text := pageText(body)
		require.Contains(t, text, "Round 3 — began")
		require.Contains(t, text, "· retried")
		require.Contains(t, text, "Round 1 — began")
		require.Less(t, strings.Index(body, `data-testid="round-3"`), strings.Index(body, "#3 deal.create"))
		require.Less(t, strings.Index(body, "#2 deal.create"), strings.Index(body, `data-testid="round-1"`))
	})
}

// A round that began because the record changed after a failure (its data
// fixed through the API, or a webhook of another service changing it) says
// so: nobody retried it, and "retried" sent support looking for who did.
func TestLinkPageSaysARoundAfterAFailureBeganWithTheRecordsChange(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.crm.SetOptions(sandbox.Options{RateValidation: 1})
		ctx := context.Background()
		_, err := b.eng.Upsert(ctx, "order", "1", []byte(`{"title":"Order 1"}`))
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(ctx))
		links, _ := models.RecordLinks(db, "order", "1")
		require.Equal(t, models.StatusFailed, links[0].Status, "refused for its data")
		b.crm.SetOptions(sandbox.Options{})
		b.clock.Advance(time.Minute)
		_, err = b.eng.Upsert(ctx, "order", "1", []byte(`{"title":"Order 1, fixed"}`))
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(ctx))
		c := b.signedIn("vic@example.com", models.RoleViewer)

		text := pageText(c.get(fmt.Sprintf("/links/%d", links[0].ID)).body)
		require.Contains(t, text, "Round 2 — began")
		require.Contains(t, text, "· the record changed")
		require.NotContains(t, text, "· retried")

		b.clock.Advance(time.Minute)
		_, err = b.eng.Delete(ctx, "order", "1")
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(ctx))
		text = pageText(c.get(fmt.Sprintf("/links/%d", links[0].ID)).body)
		require.Contains(t, text, "Round 3 — began 12:02:00")
		require.Contains(t, text, "· the record was deleted")
	})
}

// The failed page's example names a record and leads to its link, instead
// of repeating the error beside the group; a viewer is told who can retry.
func TestFailedPageNamesAnExampleRecord(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(60)
		var example models.Link
		require.NoError(t, db.Where("local_id = ?", "60").Take(&example).Error)
		viewer := b.signedIn("vic@example.com", models.RoleViewer)
		body := viewer.get("/failed").body
		cells := regexp.MustCompile(`(?s)data-testid="failed-example-\d+">(.*?)</td>`).FindAllStringSubmatch(body, -1)
		require.Len(t, cells, 2, "one example per group")
		var named bool
		for _, cell := range cells {
			require.NotContains(t, pageText(cell[1]), "HTTP", "the error is already in the group's column")
			if strings.Contains(cell[1], fmt.Sprintf(`href="/links/%d"`, example.ID)) {
				named = true
				require.Equal(t, "order 60", strings.TrimSpace(pageText(cell[1])), "the example names the record")
			}
		}
		require.True(t, named, "the 404 group's example is order 60, its newest link")
		require.Contains(t, body, `data-testid="retry-needs-role"`)
		require.Contains(t, body, "Retrying needs the operator role")

		op := b.signedIn("olga@example.com", models.RoleOperator)
		require.NotContains(t, op.get("/failed").body, "retry-needs-role")
	})
}
