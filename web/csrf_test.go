package web

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// plant puts a cookie in the client's jar the way a sibling origin (another
// port on this host, a sibling subdomain) can: cookies know no ports.
func (c *client) plant(name, value string) {
	u, _ := url.Parse(c.b.srv.URL)
	c.http.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

// siblingOrigin is this test server's origin on the next port: same site,
// another origin.
func (b *bundle) siblingOrigin() string {
	u, _ := url.Parse(b.srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return "http://" + u.Hostname() + ":" + strconv.Itoa(port+1)
}

// requireNothingChanged checks that no forged request paused crm or made a token.
func requireNothingChanged(t *testing.T, b *bundle) {
	t.Helper()
	paused, err := models.IsPaused(b.db, "crm")
	require.NoError(t, err)
	require.False(t, paused, "a forged request paused crm")
	tokens, err := models.ListAPITokens(b.db)
	require.NoError(t, err)
	require.Empty(t, tokens, "a forged request created an API token")
	require.Zero(t, b.auditCount("service.pause", models.OutcomeSuccess))
	require.Zero(t, b.auditCount("token.create", models.OutcomeSuccess))
}

// The attack of issue 13: a sibling origin plants syncdesk_csrf=X and posts
// _csrf=X from the victim's browser. Refused however the browser labels it,
// and a browser that labels nothing is stopped by the session-bound token.
// (setupServices sets the environment: the tests on it cannot be parallel.)
func TestCSRFPlantedCookieFromASiblingOriginIsRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		const planted = "planted-by-a-sibling-origin-0123456789"
		admin.plant("syncdesk_csrf", planted)
		for name, h := range map[string]http.Header{
			"Sec-Fetch-Site same-site":           {"Sec-Fetch-Site": {"same-site"}},
			"sibling Origin and same-site":       {"Sec-Fetch-Site": {"same-site"}, "Origin": {b.siblingOrigin()}},
			"an old browser that labels nothing": nil,
		} {
			for path, form := range map[string]url.Values{
				"/services/crm/pause": {"reason": {"forged"}},
				"/tokens":             {"name": {"forged"}},
			} {
				form.Set("_csrf", planted)
				r := admin.do(http.MethodPost, path, form, h)
				require.Equal(t, http.StatusForbidden, r.status, "%s, %s: %s", name, path, r.body)
				require.Contains(t, r.body, "Not allowed", "%s, %s: the refusal is the HTML error page", name, path)
				require.Contains(t, r.body, "did not come from this site", "%s, %s: the reason in words", name, path)
			}
		}
		requireNothingChanged(t, b)

		// The same person's own forms still work.
		r := admin.post("/services", "/services/crm/pause", url.Values{"reason": {"maintenance"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
	})
}

// A state change is refused unless its Origin is this exact origin: not
// another port, scheme or host, and not "null". Without an Origin, only
// Sec-Fetch-Site: same-origin (or no label at all) passes.
func TestCSRFOriginMustBeThisExactOrigin(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		u, _ := url.Parse(b.srv.URL)
		for _, h := range []http.Header{
			{"Origin": {b.siblingOrigin()}},
			{"Origin": {"https://" + u.Host}},
			{"Origin": {"http://localhost:" + u.Port()}},
			{"Origin": {"http://evil.example"}},
			{"Origin": {"null"}},
			{"Origin": {"null"}, "Sec-Fetch-Site": {"same-origin"}},
			{"Origin": {b.siblingOrigin()}, "Sec-Fetch-Site": {"same-origin"}},
			{"Sec-Fetch-Site": {"same-site"}},
			{"Sec-Fetch-Site": {"cross-site"}},
			{"Sec-Fetch-Site": {"none"}},
		} {
			form := url.Values{"reason": {"forged"}, "_csrf": {admin.csrf("/services")}}
			r := admin.do(http.MethodPost, "/services/crm/pause", form, h)
			require.Equal(t, http.StatusForbidden, r.status, "%v: %s", h, r.body)
			require.Contains(t, r.body, "did not come from this site", "%v", h)
		}
		requireNothingChanged(t, b)

		for _, h := range []http.Header{
			{"Origin": {b.srv.URL}, "Sec-Fetch-Site": {"same-origin"}},
			{"Origin": {"HTTP://" + u.Host}},
			{"Sec-Fetch-Site": {"same-origin"}},
		} {
			form := url.Values{"reason": {"maintenance"}, "_csrf": {admin.csrf("/services")}}
			r := admin.do(http.MethodPost, "/services/crm/pause", form, h)
			require.Equal(t, http.StatusSeeOther, r.status, "%v: %s", h, r.body)
			r = admin.do(http.MethodPost, "/services/crm/resume", url.Values{"_csrf": {admin.csrf("/services")}}, h)
			require.Equal(t, http.StatusSeeOther, r.status, "%v: %s", h, r.body)
		}
	})
}

// The token is the session's: the sign-in page's token authorises nothing
// once signed in, and a signed-in token dies with its session.
func TestCSRFTokenDoesNotSurviveSignInOrSignOut(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		b.user("root@example.com", models.RoleAdmin)
		c := b.client()
		beforeSignIn := c.csrf("/login")
		require.Equal(t, http.StatusSeeOther, c.login("root@example.com", testPassword).status)
		forged := func(token string) response {
			return c.do(http.MethodPost, "/tokens", url.Values{"name": {"forged"}, "_csrf": {token}}, nil)
		}
		require.Equal(t, http.StatusForbidden, forged(beforeSignIn).status, "the sign-in page's token authorised a signed-in action")

		first := c.csrf("/users")
		require.NotEqual(t, beforeSignIn, first)
		require.Equal(t, http.StatusSeeOther, c.do(http.MethodPost, "/logout", url.Values{"_csrf": {first}}, nil).status)
		require.Equal(t, http.StatusSeeOther, c.login("root@example.com", testPassword).status)
		require.Equal(t, http.StatusForbidden, forged(first).status, "a token from before sign-out authorised an action after the next sign-in")
		requireNothingChanged(t, b)

		second := c.csrf("/users")
		require.NotEqual(t, first, second, "a new sign-in must give a new token")
		r := c.do(http.MethodPost, "/tokens", url.Values{"name": {"shop"}, "_csrf": {second}}, nil)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, r.body, "shown only this once")
	})
}

// Two sessions of the same person have two tokens; neither opens the
// other, even when the other's token is planted as the CSRF cookie too (what
// an attacker does with a token of their own session).
func TestCSRFTokenOfOneSessionIsRefusedInAnother(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupServices(t, db)
		laptop := b.signedIn("root@example.com", models.RoleAdmin)
		phone := b.client()
		require.Equal(t, http.StatusSeeOther, phone.login("root@example.com", testPassword).status)
		laptopToken := laptop.csrf("/users")
		require.NotEqual(t, laptopToken, phone.csrf("/users"))
		phone.plant("syncdesk_csrf", laptopToken)
		r := phone.do(http.MethodPost, "/services/crm/pause", url.Values{"reason": {"forged"}, "_csrf": {laptopToken}}, nil)
		require.Equal(t, http.StatusForbidden, r.status, r.body)
		r = phone.do(http.MethodPost, "/tokens", url.Values{"name": {"forged"}, "_csrf": {laptopToken}},
			http.Header{"Origin": {b.srv.URL}})
		require.Equal(t, http.StatusForbidden, r.status, r.body)
		requireNothingChanged(t, b)
		// htmx sends the token as a header; the session's own one passes.
		r = laptop.do(http.MethodPost, "/services/crm/pause", url.Values{"reason": {"maintenance"}},
			http.Header{"X-CSRF-Token": {laptopToken}, "HX-Request": {"true"}, "Origin": {b.srv.URL}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
	})
}

// Signing in from another origin is refused (login CSRF), and so is a
// sign-in whose token is the one a sibling planted, when the browser says
// where it came from.
func TestCSRFSignInFromAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.user("root@example.com", models.RoleAdmin)
		c := b.client()
		c.plant("syncdesk_csrf", "planted-by-a-sibling-origin-0123456789")
		form := url.Values{"email": {"root@example.com"}, "password": {testPassword}, "_csrf": {"planted-by-a-sibling-origin-0123456789"}}
		for _, h := range []http.Header{{"Origin": {b.siblingOrigin()}}, {"Sec-Fetch-Site": {"same-site"}}, {"Origin": {"null"}}} {
			r := c.do(http.MethodPost, "/login", form, h)
			require.Equal(t, http.StatusForbidden, r.status, "%v: %s", h, r.body)
			require.Contains(t, r.body, "did not come from this site")
		}
		require.Nil(t, c.cookie(sessionCookie), "no session from a refused sign-in")
		require.Zero(t, b.auditCount("auth.login", models.OutcomeSuccess))

		fresh := b.client()
		token := fresh.csrf("/login")
		form.Set("_csrf", token)
		r := fresh.do(http.MethodPost, "/login", form, http.Header{"Origin": {b.srv.URL}, "Sec-Fetch-Site": {"same-origin"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
	})
}

// Behind a trusted proxy that ends TLS, this origin is https; a client that
// is no trusted proxy cannot make it so.
func TestCSRFOriginHonoursATrustedTLSProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		proxies []string
		scheme  string
	}{
		{"trusted proxy", []string{"127.0.0.0/8", "::1/128"}, "https"},
		{"no trusted proxy", nil, "http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := dbtest.SQLite(t)
			b := setup(t, db)
			b.cfg.TrustedProxies = tc.proxies
			s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Log: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			b.srv = httptest.NewServer(s.Handler())
			t.Cleanup(b.srv.Close)
			admin := b.signedIn("root@example.com", models.RoleAdmin)
			u, _ := url.Parse(b.srv.URL)
			for _, scheme := range []string{"http", "https"} {
				form := url.Values{"name": {"shop-" + scheme}, "_csrf": {admin.csrf("/users")}}
				r := admin.do(http.MethodPost, "/tokens", form,
					http.Header{"Origin": {scheme + "://" + u.Host}, "X-Forwarded-Proto": {"https"}})
				want := http.StatusForbidden
				if scheme == tc.scheme {
					want = http.StatusOK
				}
				require.Equal(t, want, r.status, "Origin %s://", scheme)
			}
		})
	}
}

// The JSON API and the webhooks carry no cookies: an Origin, any Origin,
// changes nothing for them.
func TestCSRFLeavesTheAPIAndWebhooksAlone(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		a := b.api()
		a.auth.Set("Origin", "http://evil.example")
		a.auth.Set("Sec-Fetch-Site", "cross-site")
		code, out := a.do(http.MethodPut, "/api/v1/records/order/1", `{"title":"Order 1"}`)
		require.Equal(t, http.StatusOK, code, out)

		srv, _ := hookServer(t, db)
		body := `{"id":"evt_origin","type":"thing.happened","data":{}}`
		h := signers["standard"](body, hookNow)
		h.Set("Origin", "null")
		h.Set("Sec-Fetch-Site", "cross-site")
		status, answer := post(t, srv.URL+"/hooks/standard", body, h)
		require.Equal(t, http.StatusOK, status, answer)
	})
}

func TestSameOriginComparesSchemeHostAndPort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		origin, scheme, host string
		same                 bool
	}{
		{"http://desk.example:8080", "http", "desk.example:8080", true},
		{"https://desk.example", "https", "desk.example", true},
		{"https://desk.example", "https", "desk.example:443", true},
		{"https://desk.example:443", "https", "desk.example", true},
		{"http://desk.example", "http", "desk.example:80", true},
		{"https://DESK.example", "https", "desk.EXAMPLE", true},
		{"http://[::1]:8080", "http", "[::1]:8080", true},
		{"http://desk.example:8081", "http", "desk.example:8080", false},
		{"https://desk.example", "http", "desk.example", false},
		{"http://desk.example", "https", "desk.example", false},
		{"https://desk.example:80", "https", "desk.example", false},
		{"https://app.desk.example", "https", "desk.example", false},
		{"https://desk.example.evil", "https", "desk.example", false},
		{"null", "https", "desk.example", false},
		{"", "https", "desk.example", false},
		{"https://desk.example/path", "https", "desk.example", false},
		{"https://user@desk.example", "https", "desk.example", false},
		{"ftp://desk.example", "ftp", "desk.example", false},
		{"https://desk.example:x", "https", "desk.example:x", false},
	} {
		require.Equal(t, tc.same, sameOrigin(tc.origin, tc.scheme, tc.host), "%q against %s://%s", tc.origin, tc.scheme, tc.host)
	}
}

// Two instances on one database take each other's tokens: the token is
// derived from the session, not from a key of one process.
func TestCSRFTokenWorksAcrossInstances(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		other, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Log: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		second := *b
		second.srv = httptest.NewServer(other.Handler())
		t.Cleanup(second.srv.Close)
		there := &client{b: &second, http: admin.http, ip: admin.ip} // the same browser: cookies know no ports

		token := admin.csrf("/users")
		require.Equal(t, token, there.csrf("/users"), "each instance must derive the same token for a session")
		r := there.do(http.MethodPost, "/tokens", url.Values{"name": {"shop"}, "_csrf": {token}},
			http.Header{"Origin": {second.srv.URL}})
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Contains(t, r.body, "shown only this once")
	})
}
