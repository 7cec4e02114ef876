package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

func isPublic(path string) bool {
	for _, p := range publicPrefixes {
		if path == strings.TrimSuffix(p, "/") || strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// Every registered route, visited without a session: pages send the visitor
// to /login, the API answers 401. A new route outside publicPrefixes that
// answers anything else fails this test.
func TestEveryRouteNeedsASessionOrAToken(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	s, err := New(Deps{DB: b.db, Config: b.cfg, Clock: b.clock})
	require.NoError(t, err)
	routes := s.echo.Routes()
	require.Greater(t, len(routes), 8, "the crawl must see the routes")
	c := b.client()
	checked := 0
	for _, r := range routes {
		path := r.Path
		for _, seg := range strings.Split(path, "/") {
			if strings.HasPrefix(seg, ":") {
				path = strings.Replace(path, seg, "1", 1)
			}
		}
		path = strings.ReplaceAll(strings.ReplaceAll(path, "/*", "*"), "*", "/x")
		if isPublic(path) {
			continue
		}
		var form url.Values
		if r.Method != http.MethodGet {
			form = url.Values{}
		}
		res := c.do(r.Method, path, form, nil)
		if strings.HasPrefix(path, "/api/") {
			require.Equal(t, http.StatusUnauthorized, res.status, "%s %s without a token", r.Method, path)
			require.Contains(t, res.body, `"error"`)
		} else {
			require.Equal(t, http.StatusSeeOther, res.status, "%s %s without a session", r.Method, path)
			require.True(t, strings.HasPrefix(res.header.Get("Location"), "/login"), "%s %s redirects to %q", r.Method, path, res.header.Get("Location"))
		}
		checked++
	}
	require.Greater(t, checked, 6)
}

func TestOpenRoutesAnswerWithoutASession(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	c := b.client()
	for path, want := range map[string]int{"/login": 200, "/healthz": 200, "/readyz": 200,
		"/static/css/app.css": 200, "/static/js/htmx-2.0.11.min.js": 200, "/static/nope.css": 404} {
		require.Equal(t, want, c.get(path).status, path)
	}
	require.Contains(t, c.get("/readyz").body, `"ready"`)
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	c := b.signedIn("ana@example.com", models.RoleViewer)
	for _, path := range []string{"/login", "/", "/audit"} {
		h := c.get(path).header
		csp := h.Get("Content-Security-Policy")
		require.Contains(t, csp, "frame-ancestors 'none'", path)
		require.Contains(t, csp, "script-src 'self'", path)
		require.NotContains(t, csp, "unsafe-inline", path)
		require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
		require.Equal(t, "same-origin", h.Get("Referrer-Policy"), path)
		require.Equal(t, "no-store", h.Get("Cache-Control"), path)
	}
}

func TestPostWithoutCSRFTokenIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		before, _ := models.CountUsers(db)

		for name, form := range map[string]url.Values{
			"missing": {"email": {"new@example.com"}, "role": {"viewer"}},
			"wrong":   {"email": {"new@example.com"}, "role": {"viewer"}, "_csrf": {"forged-token"}},
		} {
			r := admin.do(http.MethodPost, "/users", form, nil)
			require.Equal(t, http.StatusForbidden, r.status, "%s token", name)
			require.Contains(t, r.body, "Reload the page")
		}
		// A cross-site request is refused whatever it carries.
		r := admin.do(http.MethodPost, "/users", url.Values{"email": {"new@example.com"}, "role": {"viewer"},
			"_csrf": {admin.csrf("/users")}}, http.Header{"Sec-Fetch-Site": {"cross-site"}})
		require.Equal(t, http.StatusForbidden, r.status)

		after, _ := models.CountUsers(db)
		require.Equal(t, before, after, "a refused POST must not add a user")
		require.EqualValues(t, 0, b.auditCount("user.add", models.OutcomeSuccess))

		// Sign-in without a token is refused too, and records no attempt.
		r = b.client().do(http.MethodPost, "/login", url.Values{"email": {"root@example.com"}, "password": {testPassword}}, nil)
		require.Equal(t, http.StatusForbidden, r.status)
		require.EqualValues(t, 1, b.auditCount("auth.login", models.OutcomeSuccess), "only the setup's sign-in")

		// The same form with its token goes through.
		r = admin.post("/users", "/users", url.Values{"email": {"new@example.com"}, "role": {"viewer"}})
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, r.body, "shown only this once")
	})
}

func TestRolesAreEnforcedAndDenialsAudited(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		viewer := b.signedIn("vic@example.com", models.RoleViewer)
		operator := b.signedIn("ana@example.com", models.RoleOperator)

		r := viewer.post("/", "/users", url.Values{"email": {"x@example.com"}, "role": {"admin"}})
		require.Equal(t, http.StatusForbidden, r.status)
		require.Contains(t, r.body, "needs the admin role")
		require.Equal(t, http.StatusForbidden, operator.post("/", "/tokens", url.Values{"name": {"x"}}).status)
		require.Equal(t, http.StatusForbidden, viewer.get("/users").status)

		var denied []models.AuditEntry
		require.NoError(t, db.Where("action = ?", "access.denied").Order("id").Find(&denied).Error)
		require.Len(t, denied, 3)
		require.Equal(t, "vic@example.com", denied[0].Actor)
		require.Equal(t, "POST /users", denied[0].Target)
		require.Equal(t, models.OutcomeDenied, denied[0].Outcome)
		require.Equal(t, "198.51.100.7", denied[0].IP)
		n, _ := models.CountUsers(db)
		require.EqualValues(t, 2, n, "the viewer's POST added nobody")

		// A viewer reads pages but sees no admin navigation.
		page := viewer.get("/")
		require.Equal(t, http.StatusOK, page.status)
		require.NotContains(t, page.body, `href="/users"`)
	})
}

func TestErrorsArePagesForPeopleAndJSONForTheAPI(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	c := b.signedIn("ana@example.com", models.RoleViewer)
	r := c.get("/no-such-page")
	require.Equal(t, http.StatusNotFound, r.status)
	require.Contains(t, r.header.Get("Content-Type"), "text/html")
	require.Contains(t, r.body, "There is no page at this address.")

	r = c.get("/audit?since=yesterday")
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Contains(t, r.body, "is not a date")

	token, _, err := models.CreateAPIToken(b.db, "shop", "test", b.clock.Now())
	require.NoError(t, err)
	auth := http.Header{"Authorization": {"Bearer " + token}}
	r = c.do(http.MethodGet, "/api/v1/links?status=lost", nil, auth)
	require.Equal(t, http.StatusBadRequest, r.status)
	// Every status the API accepts, deleted too (it was left out).
	require.JSONEq(t, `{"error":"status must be one of new, processing, retry, failed, success, deleted"}`, r.body)
	r = c.do(http.MethodGet, "/api/v1/links?status=deleted", nil, auth)
	require.Equal(t, http.StatusOK, r.status, r.body)
	for _, cursor := range []string{"+5", "007", "0", "-3", "5x"} { // the document's pattern: ^[1-9][0-9]*$
		r = c.do(http.MethodGet, "/api/v1/links?cursor="+url.QueryEscape(cursor), nil, auth)
		require.Equal(t, http.StatusBadRequest, r.status, cursor)
		require.JSONEq(t, `{"error":"cursor must be the next_cursor of a previous page"}`, r.body)
	}
	require.Equal(t, http.StatusOK, c.do(http.MethodGet, "/api/v1/links?cursor=5", nil, auth).status)
	r = c.do(http.MethodGet, "/api/v1/nope", nil, auth)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Contains(t, r.header.Get("Content-Type"), "application/json")
}
