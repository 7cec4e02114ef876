package web

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
)

// Cross-site request forgery is stopped twice over on every state-changing
// request to a page:
//
//  1. It must come from this exact origin (scheme, host and port). A
//     browser names the page that sent a request in Origin — every current
//     one does on a POST — and, lacking it, labels it in Sec-Fetch-Site.
//     This alone stops a sibling origin (another port, a sibling
//     subdomain), which SameSite cookies let through.
//  2. It must carry the session's own token (models.Session.CSRFToken):
//     derived from the session cookie, new at every sign-in, dead at
//     sign-out, and nothing another origin can plant. This is what stops
//     a browser too old to say where a request came from.
//
// The sign-in form has no session yet, so it keeps a double-submit cookie.
// That token opens /login and nothing else.

// Where a request carries its token: htmx sends the header (hx-headers on
// the layout's body), plain forms the field (views.CSRFField).
const (
	csrfHeaderName = "X-CSRF-Token"
	csrfFormField  = "_csrf"
)

// loginCSRFCookie holds the sign-in form's token until a sign-in succeeds.
const (
	loginCSRFCookie = "syncdesk_csrf"
	loginCSRFMaxAge = 24 * time.Hour
)

const msgCSRFToken = "The form had expired or did not come from this site. Reload the page and try again."

// sessionCSRF guards the signed-in pages; it runs after requireUser. Pages
// render the session's token; a state change must come from this origin
// with that token.
func (s *Server) sessionCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		want := sessionCSRFToken(c)
		c.Set(ctxCSRF, want)
		if isSafeMethod(c.Request().Method) {
			return next(c)
		}
		if err := s.checkOrigin(c); err != nil {
			return err
		}
		if !tokenSent(c, want) {
			return s.refuseCSRF(c, "missing or wrong session token", msgCSRFToken)
		}
		return next(c)
	}
}

// loginCSRF guards the sign-in form with a random token that a cookie and
// the form both carry. A sibling origin can plant that cookie, so it is the
// origin check that stops a sibling's sign-in; the token stops the rest. A
// signed-in person's own session token is taken too (signing in again from
// a signed-in page).
func (s *Server) loginCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token := s.loginCSRFToken(c)
		c.Set(ctxCSRF, token)
		if isSafeMethod(c.Request().Method) {
			return next(c)
		}
		if err := s.checkOrigin(c); err != nil {
			return err
		}
		if !tokenSent(c, token) && !tokenSent(c, sessionCSRFToken(c)) {
			return s.refuseCSRF(c, "missing or wrong sign-in token", msgCSRFToken)
		}
		return next(c)
	}
}

// loginCSRFToken returns the sign-in token from its cookie, or a new one
// when there is none. A page view writes the cookie again, so a sign-in
// page opened now stays good for loginCSRFMaxAge.
func (s *Server) loginCSRFToken(c echo.Context) string {
	token := ""
	if ck, err := c.Cookie(loginCSRFCookie); err == nil {
		token = ck.Value
	}
	if token != "" && !isSafeMethod(c.Request().Method) {
		return token
	}
	if token == "" {
		token = models.NewSecret(32)
	}
	s.setLoginCSRFCookie(c, token, loginCSRFMaxAge)
	return token
}

// setLoginCSRFCookie writes the sign-in token's cookie; a maxAge below
// zero deletes it.
func (s *Server) setLoginCSRFCookie(c echo.Context, token string, maxAge time.Duration) {
	c.SetCookie(&http.Cookie{Name: loginCSRFCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.overTLS(c), MaxAge: int(maxAge.Seconds())})
}

// clearLoginCSRFCookie ends the sign-in token at a sign-in: the session's
// own token takes over, and a planted one is gone.
func (s *Server) clearLoginCSRFCookie(c echo.Context) {
	s.setLoginCSRFCookie(c, "", -time.Second)
}

// checkOrigin refuses a request that a browser says came from another
// origin. Origin decides when present; "null" (a sandboxed frame, a local
// file, a cross-origin redirect) is another origin. Without Origin,
// Sec-Fetch-Site must be same-origin or absent: absent is an old browser or
// a script, and either still needs the session's token, which no other
// origin can read or plant.
func (s *Server) checkOrigin(c echo.Context) error {
	r := c.Request()
	scheme, host := s.ownOrigin(c)
	var reason string
	switch origin := r.Header.Get(echo.HeaderOrigin); {
	case origin == "null":
		reason = "it was sent from a page without an address of its own (a sandboxed frame, a local file or a redirect)"
	case origin != "":
		if sameOrigin(origin, scheme, host) {
			return nil
		}
		reason = fmt.Sprintf("it was sent from %s, and this site is %s://%s", clip(origin), scheme, host)
	default:
		site := r.Header.Get(echo.HeaderSecFetchSite)
		if site == "" || site == "same-origin" {
			return nil
		}
		reason = fmt.Sprintf("your browser marked it as %s, not same-origin", clip(site))
	}
	return s.refuseCSRF(c, reason,
		"This request did not come from this site: "+reason+". Nothing was changed: if you meant to do this, do it from syncdesk's own page.")
}

// refuseCSRF answers 403 with message and logs why, for an admin looking
// into a proxy that rewrites the Host header. No token reaches the log.
func (s *Server) refuseCSRF(c echo.Context, why, message string) error {
	s.log.Warn("refused a request without this site's origin or token", "method", c.Request().Method,
		"path", c.Request().URL.Path, "why", why, "ip", c.RealIP())
	return errForbidden(message)
}

// ownOrigin is this server's origin as the browser sees it: https when the
// connection to it or to a trusted proxy is TLS (overTLS), and the Host the
// browser asked for.
func (s *Server) ownOrigin(c echo.Context) (scheme, host string) {
	if s.overTLS(c) {
		return "https", c.Request().Host
	}
	return "http", c.Request().Host
}

// sameOrigin reports whether an Origin header names scheme://host, where
// an absent port is the scheme's default (browsers leave out :443 and :80).
func sameOrigin(origin, scheme, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Scheme != scheme ||
		u.User != nil || u.Opaque != "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Hostname() == "" {
		return false
	}
	own := &url.URL{Host: host}
	return strings.EqualFold(u.Hostname(), own.Hostname()) && portOrDefault(u, scheme) == portOrDefault(own, scheme)
}

func portOrDefault(u *url.URL, scheme string) string {
	switch {
	case u.Port() != "":
		return u.Port()
	case scheme == "https":
		return "443"
	}
	return "80"
}

// tokenSent reports whether the request carries want in the header or the
// form field. The form is read from the body only: a token in the query
// string would end up in logs and histories.
func tokenSent(c echo.Context, want string) bool {
	r := c.Request()
	return tokensEqual(r.Header.Get(csrfHeaderName), want) || tokensEqual(r.PostFormValue(csrfFormField), want)
}

func tokensEqual(sent, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(want)) == 1
}

// sessionCSRFToken is the signed-in session's token, or "" without one.
func sessionCSRFToken(c echo.Context) string {
	if sess, ok := c.Get(ctxSession).(*models.Session); ok {
		return sess.CSRFToken
	}
	return ""
}

// csrfToken is the token the forms on this page carry.
func csrfToken(c echo.Context) string {
	t, _ := c.Get(ctxCSRF).(string)
	return t
}

// isSafeMethod reports whether a method changes nothing (RFC 9110 §9.2.1).
func isSafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions || m == http.MethodTrace
}

// clip keeps what a client sent short enough for a page and a log line.
func clip(s string) string {
	const limit = 100
	if r := []rune(s); len(r) > limit {
		return string(r[:limit]) + "…"
	}
	return s
}
