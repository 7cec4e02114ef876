package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

func TestSignInSignOutAndTheOldCookieIsDead(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.user("ana@example.com", models.RoleOperator)
		c := b.client()

		r := c.get("/")
		require.Equal(t, http.StatusSeeOther, r.status)
		require.Equal(t, "/login", r.header.Get("Location"))

		r = c.login("ana@example.com", testPassword)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		ck := c.cookie(sessionCookie)
		require.NotNil(t, ck, "no session cookie after sign-in")
		setCookie := r.header.Get("Set-Cookie")
		require.Contains(t, setCookie, "HttpOnly")
		require.Contains(t, setCookie, "SameSite=Lax")
		require.NotContains(t, setCookie, "Secure", "plain HTTP must not set Secure")

		r = c.get("/")
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.body, "ana")
		require.Equal(t, "no-store", r.header.Get("Cache-Control"))

		r = c.post("/", "/logout", nil)
		require.Equal(t, http.StatusSeeOther, r.status)
		require.EqualValues(t, 1, b.auditCount("auth.logout", models.OutcomeSuccess))

		// Replaying the old cookie gets nothing: the session row is gone.
		stale := b.client()
		u, _ := url.Parse(b.srv.URL)
		stale.http.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: ck.Value}})
		r = stale.get("/")
		require.Equal(t, http.StatusSeeOther, r.status)
		var n int64
		require.NoError(t, db.Model(&models.Session{}).Count(&n).Error)
		require.Zero(t, n)
	})
}

func TestSignInGivesAFreshSessionID(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleViewer)
	c := b.client()
	require.Equal(t, http.StatusSeeOther, c.login("ana@example.com", testPassword).status)
	first := c.cookie(sessionCookie).Value
	// Signed in, /login redirects away: post the form with a token from another page.
	form := url.Values{"email": {"ana@example.com"}, "password": {testPassword}}
	require.Equal(t, http.StatusSeeOther, c.post("/", "/login", form).status)
	second := c.cookie(sessionCookie).Value
	require.NotEqual(t, first, second)
	_, _, err := models.SessionUser(b.db, first, b.clock.Now(), time.Hour)
	require.ErrorIs(t, err, models.ErrNotFound, "the session replaced at sign-in must be gone")
}

func TestIdleAndAbsoluteTimeouts(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	c := b.signedIn("ana@example.com", models.RoleViewer)
	b.clock.Advance(b.cfg.Session.IdleTimeout - time.Minute)
	require.Equal(t, http.StatusOK, c.get("/").status, "activity within the idle timeout keeps the session")
	b.clock.Advance(b.cfg.Session.IdleTimeout + time.Second)
	require.Equal(t, http.StatusSeeOther, c.get("/").status, "an idle session must end")

	c = b.client()
	require.Equal(t, http.StatusSeeOther, c.login("ana@example.com", testPassword).status)
	for elapsed := time.Duration(0); elapsed < b.cfg.Session.AbsoluteTimeout; elapsed += b.cfg.Session.IdleTimeout / 2 {
		require.Equal(t, http.StatusOK, c.get("/").status, "active session ended early at %v", elapsed)
		b.clock.Advance(b.cfg.Session.IdleTimeout / 2)
	}
	require.Equal(t, http.StatusSeeOther, c.get("/").status, "a session must end at its absolute timeout, however active")
}

// A tab left open keeps asking for its page's news, and the session still
// ends once its person has not used it for the idle timeout: a poll is no
// activity, a click is.
func TestPollsDoNotKeepAnIdleSessionAlive(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	c := b.signedIn("ana@example.com", models.RoleViewer)
	poll := http.Header{"Hx-Request": {"true"}, "Hx-Target": {"live"}}
	for _, step := range []time.Duration{time.Minute, b.cfg.Session.IdleTimeout / 2, b.cfg.Session.IdleTimeout/2 - 2*time.Minute} {
		b.clock.Advance(step)
		r := c.do(http.MethodGet, "/", nil, poll)
		require.Contains(t, []int{http.StatusOK, http.StatusNoContent}, r.status, "the session is still within its idle timeout")
	}
	b.clock.Advance(2 * time.Minute)
	r := c.do(http.MethodGet, "/", nil, poll)
	require.Equal(t, http.StatusUnauthorized, r.status, "polls alone kept the session alive")
	require.True(t, strings.HasPrefix(r.header.Get("HX-Redirect"), "/login"), "the page goes to the sign-in page")

	c = b.signedIn("bo@example.com", models.RoleViewer)
	b.clock.Advance(b.cfg.Session.IdleTimeout - time.Minute)
	require.Equal(t, http.StatusOK, c.get("/links").status, "a page opened by a person is activity")
	b.clock.Advance(b.cfg.Session.IdleTimeout - time.Minute)
	require.Equal(t, http.StatusOK, c.get("/").status)
}

// The session cookie's lifetime is counted on the browser's clock, not
// read from syncdesk's (the database's): a browser whose clock is a year
// ahead stays signed in, where an Expires date from syncdesk's clock would
// have been in the browser's past and the cookie dropped at once.
func TestASessionLastsWhenTheBrowsersClockIsAhead(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	b.clock.Advance(-365 * 24 * time.Hour)
	c := b.signedIn("ana@example.com", models.RoleViewer)
	require.NotNil(t, c.cookie(sessionCookie), "the browser kept the session cookie")
	require.Equal(t, http.StatusOK, c.get("/").status)
}

func TestDisablingAUserEndsTheirSessions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		ana := b.signedIn("ana@example.com", models.RoleOperator)
		require.Equal(t, http.StatusOK, ana.get("/").status)

		r := admin.post("/users", "/users/disable", url.Values{"email": {"ana@example.com"}, "confirm": {"1"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, http.StatusSeeOther, ana.get("/").status, "a disabled user's session must end")
		require.EqualValues(t, 1, b.auditCount("user.disable", models.OutcomeSuccess))

		r = b.client().login("ana@example.com", testPassword)
		require.Equal(t, http.StatusUnauthorized, r.status, "a disabled user cannot sign in")
	})
}

func TestUnknownUserAndWrongPasswordLookAlike(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleViewer)
	wrong := b.client().login("ana@example.com", "not-the-password")
	unknown := b.client().login("nobody@example.com", "not-the-password")
	require.Equal(t, http.StatusUnauthorized, wrong.status)
	require.Equal(t, wrong.status, unknown.status)
	require.Contains(t, wrong.body, msgBadLogin)
	norm := func(s string) string {
		return csrfField.ReplaceAllString(strings.ReplaceAll(s, "nobody@example.com", "X"), "")
	}
	require.Equal(t, norm(strings.ReplaceAll(wrong.body, "ana@example.com", "X")), norm(unknown.body),
		"the page must not tell an unknown account from a wrong password")
	require.EqualValues(t, 2, b.auditCount("auth.login", models.OutcomeFailure))
}

func TestThrottlingLocksTheAccountAcrossIPs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.user("ana@example.com", models.RoleOperator)
		attacker := b.client()
		attacker.ip = "203.0.113.1"
		for i := 0; i < b.cfg.Login.MaxFailures; i++ {
			r := attacker.login("ana@example.com", "guess-"+string(rune('a'+i)))
			require.Equal(t, http.StatusUnauthorized, r.status, "attempt %d", i+1)
		}
		ana := b.client()
		ana.ip = "198.51.100.99" // a fresh IP, and the right password
		r := ana.login("ana@example.com", testPassword)
		require.Equal(t, http.StatusTooManyRequests, r.status)
		require.Contains(t, r.body, "Too many failed sign-ins")
		require.Nil(t, ana.cookie(sessionCookie), "no session while throttled")

		// An unknown account is throttled the same way, so lockout reveals nothing.
		for i := 0; i < b.cfg.Login.MaxFailures; i++ {
			attacker.login("ghost@example.com", "guess")
		}
		require.Equal(t, http.StatusTooManyRequests, ana.login("ghost@example.com", "guess").status)

		// When the window has passed, the right password works again.
		b.clock.Advance(b.cfg.Login.Window + time.Second)
		require.Equal(t, http.StatusSeeOther, ana.login("ana@example.com", testPassword).status)
	})
}

// A burst of wrong passwords at one account, all at once from many IPs,
// gets only a few checks past the limit: the throttle is read in turn.
func TestThrottlingHoldsUnderABurst(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db)
		b.user("ana@example.com", models.RoleOperator)
		const burst = 40
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for i := range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := b.client()
				c.ip = fmt.Sprintf("203.0.113.%d", i+1)
				r := c.login("ana@example.com", "guess")
				mu.Lock()
				codes[r.status]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		require.Equal(t, burst, codes[http.StatusUnauthorized]+codes[http.StatusTooManyRequests], "only refusals: %v", codes)
		require.GreaterOrEqual(t, codes[http.StatusUnauthorized], b.cfg.Login.MaxFailures)
		require.LessOrEqual(t, codes[http.StatusUnauthorized], b.cfg.Login.MaxFailures+strangerChecks-1,
			"password checks past the limit: %v", codes)
	})
}

// A password typed into the email field does not reach the audit log.
func TestASignInAuditsNoPasswordTypedAsEmail(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	c := b.client()
	require.Equal(t, http.StatusUnauthorized, c.login("Tr0ub4dor&3-horse", "x").status)
	require.Equal(t, http.StatusUnauthorized, c.login("nobody@example.com", "x").status)
	var targets []string
	require.NoError(t, b.db.Model(&models.AuditEntry{}).Where("action = ?", "auth.login").Order("id").Pluck("target", &targets).Error)
	require.Equal(t, []string{"(not an email address)", "nobody@example.com"}, targets)
}

func TestThrottlingPerIP(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleOperator)
	sprayer := b.client()
	sprayer.ip = "203.0.113.50"
	for i := 0; i < b.cfg.Login.MaxFailuresPerIP; i++ {
		sprayer.login("user"+string(rune('a'+i%26))+string(rune('a'+i/26))+"@example.com", "guess")
	}
	require.Equal(t, http.StatusTooManyRequests, sprayer.login("ana@example.com", testPassword).status,
		"an IP that sprayed many accounts is refused")
	other := b.client()
	other.ip = "198.51.100.3"
	require.Equal(t, http.StatusSeeOther, other.login("ana@example.com", testPassword).status,
		"another IP is not affected")
}

func TestLoginRedirectsBackToTheAskedPageButNeverOffSite(t *testing.T) {
	t.Parallel()
	require.Equal(t, "/audit?actor=x", safeNext("/audit?actor=x"))
	for _, bad := range []string{"", "https://evil.example", "//evil.example", "/\\evil.example", "javascript:alert(1)", "/login",
		"/\t/evil.example", "/\n/evil.example", "/\r\n/evil.example", "/\x00/evil.example", "\t//evil.example", "/%09/x\\y"} {
		require.Equal(t, "/", safeNext(bad), bad)
	}
	b := setupSQLite(t)
	b.user("ana@example.com", models.RoleViewer)
	c := b.client()
	r := c.get("/audit?actor=ana%40example.com")
	require.Equal(t, http.StatusSeeOther, r.status)
	require.Equal(t, "/login?next=%2Faudit%3Factor%3Dana%2540example.com", r.header.Get("Location"))
	form := url.Values{"email": {"ana@example.com"}, "password": {testPassword}, "next": {"/audit?actor=ana%40example.com"}}
	r = c.post("/login?next=x", "/login", form)
	require.Equal(t, "/audit?actor=ana%40example.com", r.header.Get("Location"))
}

// Behind a trusted proxy that ends TLS, cookies are Secure and HSTS is
// sent; a client that is no trusted proxy cannot claim it.
func TestCookiesAreSecureBehindATrustedTLSProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		proxies []string
		secure  bool
	}{
		{"trusted proxy", []string{"127.0.0.0/8", "::1/128"}, true},
		{"no trusted proxy", nil, false},
		{"another proxy", []string{"10.0.0.0/8"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := dbtest.SQLite(t)
			b := setup(t, db)
			b.user("ana@example.com", models.RoleViewer)
			b.cfg.TrustedProxies = tc.proxies
			s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Log: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			b.srv = srv
			c := b.client()
			token := c.csrf("/login")
			form := url.Values{"email": {"ana@example.com"}, "password": {testPassword}, "_csrf": {token}}
			r := c.do(http.MethodPost, "/login", form, http.Header{"X-Forwarded-Proto": {"https"}})
			require.Equal(t, http.StatusSeeOther, r.status, r.body)
			session := ""
			for _, ck := range r.header.Values("Set-Cookie") {
				if strings.HasPrefix(ck, sessionCookie+"=") {
					session = ck
				}
			}
			require.NotEmpty(t, session)
			require.Equal(t, tc.secure, strings.Contains(session, "; Secure"), session)
			require.Equal(t, tc.secure, r.header.Get("Strict-Transport-Security") != "")
		})
	}
}

func TestSessionCookieIsSecureOverTLS(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	b := setup(t, db)
	b.user("ana@example.com", models.RoleViewer)
	s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	tls := httptest.NewTLSServer(s.Handler())
	defer tls.Close()
	b.srv = tls
	c := b.client()
	c.http.Transport = tls.Client().Transport
	r := c.login("ana@example.com", testPassword)
	require.Equal(t, http.StatusSeeOther, r.status, r.body)
	cookies := r.header.Values("Set-Cookie")
	require.NotEmpty(t, cookies)
	for _, ck := range cookies {
		require.Contains(t, ck, "; Secure", "over TLS every cookie is Secure: %s", ck)
	}
	require.Contains(t, r.header.Get("Strict-Transport-Security"), "max-age=")
}
