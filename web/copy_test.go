package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/reconcile"
)

// A refusal names the roles that may: nothing is "higher" than admin.
func TestForbiddenNamesTheRolesThatMay(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	b.seedLinks(1)
	vic := b.signedIn("vic@example.com", models.RoleViewer)
	r := vic.get("/users")
	require.Equal(t, http.StatusForbidden, r.status)
	require.Contains(t, pageText(r.body), "This needs the admin role. Ask an admin if you need it.")
	require.NotContains(t, r.body, "or higher")
	r = vic.post("/links", "/links/1/sync", nil)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Contains(t, pageText(r.body), "This needs the operator or admin role.")
}

// An empty list of events speaks of typos only when an event type was
// typed; "Clear them" on the links and discrepancies lists is a link.
func TestEmptyFilteredListsSayWhatHelps(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, _ := reconcileServer(t, db, 0)
		seedEvent(t, db, "crm", "wh_1", "deal.updated", models.EventApplied, b.clock.Now())
		id := seedRun(t, db, b.clock.Now(), 2)
		c := b.signedIn("vic@example.com", models.RoleViewer)

		r := c.get("/events?outcome=failed")
		require.Contains(t, r.body, `data-testid="empty-events"`)
		require.NotContains(t, r.body, "typos", "no type was typed")
		require.Contains(t, r.body, `<a href="/events">Clear the filters</a>`)
		r = c.get("/events?type=deal.updatd")
		require.Contains(t, pageText(r.body), "Check the event type for typos")

		r = c.get("/links?status=failed")
		require.Contains(t, r.body, `data-testid="links-empty"`)
		require.Contains(t, r.body, `<a href="/links" data-testid="links-clear">Clear them</a>`)
		r = c.get(fmt.Sprintf("/reconcile/%d?kind=unlinked_remote", id))
		require.Contains(t, r.body, `data-testid="disc-empty"`)
		require.Contains(t, r.body, fmt.Sprintf(`<a href="/reconcile/%d" data-testid="disc-clear">Clear them</a>`, id))
	})
}

// A dry run's findings say what the fix is, not that it will be done.
func TestDryRunDetailsSayWhatTheFixIs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rec := reconcileServer(t, db, 0)
		b.seedOrders(1, 2)
		b.deleteRemote(1)
		b.clock.Advance(time.Minute) // a link changed in the run's instant is left alone
		run, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{TriggeredBy: "test", DryRun: true})
		require.NoError(t, err)
		text := pageText(b.signedIn("vic@example.com", models.RoleViewer).get(fmt.Sprintf("/reconcile/%d", run.ID)).body)
		require.Contains(t, text, "the fix creates it again")
		require.NotContains(t, text, "anew")
		require.NotContains(t, text, "will be created")
	})
}

// A session that ends under an htmx request (a status polling itself, a
// button) sends the browser to sign in with the page it was on as next,
// never the fragment's address, and never off the site.
func TestHtmxSignInRedirectKeepsThePage(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	c := b.client()
	page := b.srv.URL + "/links/5?tab=attempts"
	for _, req := range []struct{ method, path string }{{http.MethodGet, "/links/5/status"}, {http.MethodPost, "/links/5/sync"}} {
		r := c.do(req.method, req.path, url.Values{}, http.Header{"Hx-Request": {"true"}, "Hx-Current-Url": {page}})
		require.Equal(t, http.StatusUnauthorized, r.status, req.path)
		require.Equal(t, "/login?next="+url.QueryEscape("/links/5?tab=attempts"), r.header.Get("HX-Redirect"), req.path)
	}
	for _, from := range []string{"", "https://evil.example//evil.example/x", "/login?next=/x"} {
		r := c.do(http.MethodGet, "/links/5/status", nil, http.Header{"Hx-Request": {"true"}, "Hx-Current-Url": {from}})
		require.Equal(t, "/login", r.header.Get("HX-Redirect"), from)
	}
}
