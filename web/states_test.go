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

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// Sync now on a link of a paused service: the link says paused (not "in
// progress", not "to send"), and the overview does not count it among the
// syncs in progress.
func TestPausedServiceLinksSayPausedAndAreNotInProgress(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		_, err := b.eng.Upsert(context.Background(), "order", "7", []byte(`{"title":"Order 7"}`))
		require.NoError(t, err)
		require.NoError(t, b.eng.Drain(context.Background()))
		links, _ := models.RecordLinks(db, "order", "7")
		id := fmt.Sprint(links[0].ID)
		op := b.signedIn("olga@example.com", models.RoleOperator)
		r := op.post("/services", "/services/crm/pause", url.Values{"reason": {"provider maintenance"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)

		htmx := http.Header{"Hx-Request": {"true"}}
		r = op.do(http.MethodPost, "/links/"+id+"/sync", url.Values{"_csrf": {op.csrf("/links/" + id)}}, htmx)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, r.body, `data-state="paused"`)
		require.Contains(t, r.body, "Paused</span>")
		require.Contains(t, r.body, "asked by you at 12:00:00 UTC; crm is paused: it goes when resumed")
		require.NotContains(t, r.body, "Queued</span>")
		require.NotContains(t, r.body, "hx-trigger", "nothing changes before the resume: no polling")

		page := op.get("/links/" + id).body
		require.Contains(t, page, `data-state="paused"`)
		require.Contains(t, op.get("/links").body, "crm is paused: it goes when resumed")

		over := op.get("/").body
		require.Regexp(t, `data-testid="in-progress-total"[^>]*>0<`, over, "a sync that cannot go is not in progress")
		require.Contains(t, over, "1 more asked for on a paused service")

		// Resumed, the same link reads queued, and the overview counts it.
		r = op.post("/services", "/services/crm/resume", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Contains(t, op.get("/links/"+id).body, `data-state="new"`)
		over = op.get("/").body
		require.Regexp(t, `data-testid="in-progress-total"[^>]*>1<`, over)
		require.Contains(t, over, "by olga@example.com, waiting its turn", "asked for, not being sent yet")
	})
}

// Retry (of a failed link) is its own audit action, apart from Sync now.
func TestRetryIsAuditedApartFromSyncNow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(3) // 1, 2 synced; 3 failed
		c := b.signedIn("ana@example.com", models.RoleOperator)
		require.Equal(t, http.StatusSeeOther, c.post("/links/3", "/links/3/sync", nil).status)
		require.Equal(t, http.StatusSeeOther, c.post("/links/1", "/links/1/sync", nil).status)
		var retry, syncs []models.AuditEntry
		require.NoError(t, db.Where("action = ?", action.LinkRetry).Find(&retry).Error)
		require.NoError(t, db.Where("action = ?", action.LinkSync).Find(&syncs).Error)
		require.Len(t, retry, 1)
		require.Equal(t, "link 3", retry[0].Target)
		require.Len(t, syncs, 1)
		require.Equal(t, "link 1", syncs[0].Target)
		require.Contains(t, c.get("/audit?action=link.retry").body, "link 3", `"Retried a link" finds the retry`)
	})
}

// A bulk retry of a group records the group and the ids it retried.
func TestBulkRetryOfAGroupAuditsTheGroupAndItsIDs(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(12) // failed: 3, 9 (422); 6, 12 (404)
		c := b.signedIn("ana@example.com", models.RoleOperator)
		group := models.ErrorGroup("crm", 404, "HTTP 404: no deal deal_6")
		r := c.post("/failed", "/failed/retry", url.Values{"group": {group}})
		require.Equal(t, http.StatusOK, r.status, r.body)
		form := url.Values{}
		for _, m := range regexp.MustCompile(`name="(id|group)" value="([^"]+)"`).FindAllStringSubmatch(r.body, -1) {
			form.Add(m[1], html.UnescapeString(m[2]))
		}
		require.Equal(t, group, form.Get("group"), "the confirmation carries the group")
		r = c.post("/failed", "/failed/retry/confirm", form)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		var e models.AuditEntry
		require.NoError(t, db.Where("action = ?", action.LinkBulkRetry).Take(&e).Error)
		require.Equal(t, "group "+group, e.Target)
		require.Equal(t, "2 links, ids 12, 6; queued 2, already in progress 0, no longer there 0", e.Detail)
		require.Contains(t, c.get("/audit").body, `href="/failed/group?g=`+url.QueryEscape(group)+`"`, "the target is a way to the group")
	})
}

func TestAuditIDListIsCapped(t *testing.T) {
	ids := make([]int64, 120)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	s := idList(ids)
	require.True(t, strings.HasPrefix(s, "120 links, ids 1, 2, 3"), s)
	require.True(t, strings.HasSuffix(s, ", 50 and 70 more"), s)
}

func TestAuditHidesSignIns(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(3)
		c := b.signedIn("ana@example.com", models.RoleOperator)
		require.Equal(t, http.StatusSeeOther, c.post("/links/3", "/links/3/sync", nil).status)
		all := c.get("/audit").body
		require.Contains(t, all, "auth.login")
		hidden := c.get("/audit?hide_signins=1").body
		require.NotContains(t, hidden, "<code class=\"code-sub\">auth.login</code>")
		require.Contains(t, hidden, "link.retry")
		require.Regexp(t, `name="hide_signins" type="checkbox" value="1" checked`, hidden, "the box stays ticked")
	})
}

// A failed link put aside leaves Failed (counted apart), is found under Put
// aside, and comes back; each step is audited. A retry takes it out of put aside.
func TestPutAsideAndBringBackALink(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(12) // failed: 3, 9 (422); 6, 12 (404)
		c := b.signedIn("ana@example.com", models.RoleOperator)
		require.Contains(t, c.get("/links/3").body, `data-testid="put-aside"`)

		r := c.post("/links/3", "/links/3/aside", url.Values{"reason": {"  "}})
		require.Equal(t, http.StatusBadRequest, r.status, "a reason is needed")
		require.Contains(t, r.body, "Say why")
		r = c.post("/links/1", "/links/1/aside", url.Values{"reason": {"x"}})
		require.Equal(t, http.StatusBadRequest, r.status, "a synced link cannot be put aside")
		require.Contains(t, r.body, "Only a failed link can be put aside")

		r = c.post("/links/3", "/links/3/aside", url.Values{"reason": {"test order, never real"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		page := c.get("/links/3").body
		require.Contains(t, page, `data-state="aside"`)
		require.Contains(t, page, "by ana@example.com: test order, never real")
		require.Contains(t, page, `data-testid="bring-back"`)
		failed := c.get("/failed").body
		require.Contains(t, failed, "Failed (3)")
		require.Contains(t, failed, "Put aside (1)")
		require.Contains(t, failed, "3 failed links in 2 groups")
		aside := c.get("/failed?aside=1").body
		require.Contains(t, aside, "1 link put aside in 1 group")
		require.Contains(t, aside, "put aside by ana@example.com: test order, never real")
		require.Contains(t, c.get("/").body, "Failed counts 1 put aside")
		require.EqualValues(t, 1, b.auditCount(action.LinkPutAside, models.OutcomeSuccess))

		r = c.post("/links/3", "/links/3/back", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Contains(t, c.get("/failed").body, "Failed (4)")
		require.Contains(t, c.get("/links/3").body, `data-state="failed"`)
		require.EqualValues(t, 1, b.auditCount(action.LinkBringBack, models.OutcomeSuccess))
		r = c.post("/links/3", "/links/3/back", nil)
		require.Equal(t, http.StatusBadRequest, r.status, "twice changes nothing, in words")

		// Put aside, then retried: it is queued, and no longer put aside.
		require.Equal(t, http.StatusSeeOther, c.post("/links/9", "/links/9/aside", url.Values{"reason": {"known bad"}}).status)
		require.Equal(t, http.StatusSeeOther, c.post("/links/9", "/links/9/sync", nil).status)
		l, err := models.LinkByID(db, 9)
		require.NoError(t, err)
		require.Equal(t, models.StatusNew, l.Status)
		require.Nil(t, l.PutAsideAt)
		require.Contains(t, c.get("/failed?aside=1").body, "Nothing is put aside")
	})
}

func TestPutAsideAndBringBackAGroup(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(12)
		c := b.signedIn("ana@example.com", models.RoleOperator)
		group := models.ErrorGroup("crm", 422, "HTTP 422: title 3 is too long")
		page := "/failed/group?g=" + url.QueryEscape(group)
		require.Contains(t, c.get(page).body, `data-testid="aside-group-form"`)
		r := c.post(page, "/failed/aside", url.Values{"group": {group}, "reason": {""}})
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, "Say why")
		r = c.post(page, "/failed/aside", url.Values{"group": {group}, "reason": {"the shop's test orders"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Contains(t, c.get("/failed").body, "Put aside (2)")
		require.NotContains(t, c.get("/failed").body, "title N is too long")
		require.Contains(t, c.get("/failed?aside=1").body, "title N is too long")
		body := c.get(page + "&aside=1").body
		require.Equal(t, 2, strings.Count(body, "the shop&#39;s test orders"), body)
		var e models.AuditEntry
		require.NoError(t, db.Where("action = ? AND outcome = ?", action.GroupPutAside, models.OutcomeSuccess).Take(&e).Error)
		require.Equal(t, "group "+group, e.Target)
		require.Equal(t, "put aside 2: 2 links, ids 9, 3; reason: the shop's test orders", e.Detail)

		r = c.post(page+"&aside=1", "/failed/back", url.Values{"group": {group}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Contains(t, c.get("/failed").body, "Failed (4)")
		require.Contains(t, c.get("/failed").body, "Put aside (0)")
		require.EqualValues(t, 1, b.auditCount(action.GroupBringBack, models.OutcomeSuccess))
		r = c.post(page, "/failed/back", url.Values{"group": {group}})
		require.Equal(t, http.StatusBadRequest, r.status, "nothing left to bring back")

		viewer := b.signedIn("vic@example.com", models.RoleViewer)
		require.Equal(t, http.StatusForbidden, viewer.post("/failed", "/failed/aside", url.Values{"group": {group}, "reason": {"x"}}).status)
		require.Equal(t, http.StatusForbidden, viewer.post("/links/3", "/links/3/aside", url.Values{"reason": {"x"}}).status)
	})
}

// A group of 4xx failures says that a retry resends the same body, on the
// Failed page, the group's page and the retry's confirmation; 503s do not.
func TestPermanentFailureGroupsSayFixTheDataAtTheSource(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.seedLinks(12)
		now := b.clock.Now()
		msg := "gave up after 3 attempts; last: HTTP 503: unavailable"
		require.NoError(t, db.Create(&models.Link{LocalType: "order", LocalID: "x", ExternalService: "crm", ExternalKey: "k", Attempts: 3,
			Status: models.StatusFailed, LastHTTPCode: 503, LastError: msg, ErrorGroup: models.ErrorGroup("crm", 503, msg),
			NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}).Error)
		require.NoError(t, models.RefreshStats(db, now))
		c := b.signedIn("ana@example.com", models.RoleOperator)
		failed := c.get("/failed").body
		require.Equal(t, 2, strings.Count(failed, "Refused data: a retry resends the same body"), "the two 4xx groups, not the 503s")
		require.Equal(t, 2, strings.Count(failed, "Retry all, once fixed…"))
		require.Equal(t, 1, strings.Count(failed, "Retry all…"))

		group := models.ErrorGroup("crm", 422, "HTTP 422: title 3 is too long")
		require.Contains(t, c.get("/failed/group?g="+url.QueryEscape(group)).body, `data-testid="fix-at-source"`)
		r := c.post("/failed", "/failed/retry", url.Values{"group": {group}})
		require.Contains(t, r.body, `data-testid="confirm-permanent"`)
		require.Contains(t, c.get("/links/3").body, "permanently: fix the data at the source")

		var l models.Link
		require.NoError(t, db.Where("local_id = ?", "x").Take(&l).Error)
		page := c.get(fmt.Sprintf("/links/%d", l.ID)).body
		require.Contains(t, page, "after 3 temporary errors: a retry may work")
		require.NotContains(t, page, `data-testid="fix-at-source"`)
		r = c.post("/failed", "/failed/retry", url.Values{"group": {l.ErrorGroup}})
		require.NotContains(t, r.body, `data-testid="confirm-permanent"`)
	})
}

func TestLinksSearchFindsTheIdempotencyKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		_, err := b.eng.Upsert(context.Background(), "order", "7", []byte(`{"title":"Order 7"}`))
		require.NoError(t, err)
		_, err = b.eng.Upsert(context.Background(), "order", "8", []byte(`{"title":"Order 8"}`))
		require.NoError(t, err)
		links, _ := models.RecordLinks(db, "order", "7")
		key := links[0].IdempotencyKey
		require.NotEmpty(t, key)
		c := b.signedIn("vic@example.com", models.RoleViewer)
		require.Contains(t, c.get(fmt.Sprintf("/links/%d", links[0].ID)).body, "<code>"+key+"</code>", "the key is shown on the link's page")
		require.Equal(t, []string{fmt.Sprint(links[0].ID)}, rowIDs(c.get("/links?q="+url.QueryEscape(key)).body))
	})
}

func TestAdminEnablesADisabledUserAndSeesTheLastSignIn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		b.user("ana@example.com", models.RoleOperator)
		page := admin.get("/users").body
		require.Regexp(t, `data-testid="last-sign-in-root@example.com"><time[^>]*>just now</time>`, page)
		require.Regexp(t, `data-testid="last-sign-in-ana@example.com"><span class="muted">not yet</span>`, page)

		r := admin.post("/users", "/users/disable", url.Values{"email": {"ana@example.com"}, "confirm": {"1"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, http.StatusUnauthorized, b.client().login("ana@example.com", testPassword).status)
		require.Contains(t, admin.get("/users").body, `data-testid="enable-ana@example.com"`)

		op := b.signedIn("olga@example.com", models.RoleOperator)
		require.Equal(t, http.StatusForbidden, op.post("/", "/users/enable", url.Values{"email": {"ana@example.com"}}).status)

		r = admin.post("/users", "/users/enable", url.Values{"email": {"ana@example.com"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, "/users?done=user-enabled", r.header.Get("Location"))
		require.EqualValues(t, 1, b.auditCount(action.UserEnable, models.OutcomeSuccess))
		require.Equal(t, http.StatusSeeOther, b.client().login("ana@example.com", testPassword).status, "ana signs in again")
		require.NotContains(t, admin.get("/users").body, `data-testid="enable-ana@example.com"`)
		u, err := models.UserByEmail(db, "ana@example.com")
		require.NoError(t, err)
		require.NotNil(t, u.LastSignInAt)

		r = admin.post("/users", "/users/enable", url.Values{"email": {"ana@example.com"}})
		require.Equal(t, "/users?done=user-not-disabled", r.header.Get("Location"))
		require.EqualValues(t, 1, b.auditCount(action.UserEnable, models.OutcomeSuccess), "enabling an active user changes nothing")
	})
}

// A group larger than one bulk step (1,000 links) is put aside and brought
// back whole, as the buttons say; a retry takes the newest 1,000 and says
// so on its confirmation.
func TestAGroupLargerThanOneBulkStepIsPutAsideWhole(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		now := b.clock.Now()
		group := models.ErrorGroup("crm", 422, "HTTP 422: title is required")
		links := make([]models.Link, maxBulk+3)
		for i := range links {
			links[i] = models.Link{LocalType: "order", LocalID: fmt.Sprint(i + 1), ExternalService: "crm", ExternalKey: fmt.Sprintf("site_order_%d", i+1),
				Status: models.StatusFailed, LastError: "HTTP 422: title is required", LastHTTPCode: 422, ErrorGroup: group,
				NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
		}
		require.NoError(t, db.CreateInBatches(links, 500).Error)
		c := b.signedIn("ana@example.com", models.RoleOperator)
		page := "/failed/group?g=" + url.QueryEscape(group)

		r := c.post(page, "/failed/retry", url.Values{"group": {group}})
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, pageText(r.body), "The newest 1,000 failed links of the group “"+group+"”: a retry takes at most that many at once. Retry the group again for the rest.")

		r = c.post(page, "/failed/aside", url.Values{"group": {group}, "reason": {"the shop's test orders"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		var aside int64
		require.NoError(t, db.Model(&models.Link{}).Where("put_aside_at IS NOT NULL").Count(&aside).Error)
		require.EqualValues(t, maxBulk+3, aside, "every link of the group")
		var e models.AuditEntry
		require.NoError(t, db.Where("action = ? AND outcome = ?", action.GroupPutAside, models.OutcomeSuccess).Take(&e).Error)
		require.Contains(t, e.Detail, "put aside 1003: 1,003 links, ids 1003, 1002,")
		require.Contains(t, e.Detail, "and 953 more; reason: the shop's test orders")

		r = c.post(page+"&aside=1", "/failed/back", url.Values{"group": {group}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.NoError(t, db.Model(&models.Link{}).Where("put_aside_at IS NOT NULL").Count(&aside).Error)
		require.Zero(t, aside, "every link is back on Failed")
	})
}
