package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/sync/config"
)

// Context keys for what the auth middleware found, and the CSRF token the
// page's forms carry.
const (
	ctxUser    = "user"
	ctxSession = "session"
	ctxToken   = "api_token"
	ctxCSRF    = "csrf"
)

// sessionCookie is the name of the sign-in cookie.
const sessionCookie = "syncdesk_session"

// csp needs no inline script or style: htmx is a file and its indicator
// styles are turned off in the htmx-config meta tag.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		if s.overTLS(c) {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if !strings.HasPrefix(c.Request().URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		} else {
			h.Set("Cache-Control", "public, max-age=86400")
		}
		return next(c)
	}
}

// noStore keeps signed-in pages and API answers out of every cache.
func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-store")
		return next(c)
	}
}

// logRequests writes one structured line per request. It logs the path
// without the query string, where tokens and personal data could hide.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // write the response now, so the status logged is the one sent
		}
		status := c.Response().Status
		s.log.LogAttrs(c.Request().Context(), requestLevel(status), "request",
			slog.String("method", c.Request().Method),
			slog.String("path", c.Request().URL.Path),
			slog.Int("status", status),
			slog.Duration("took", time.Since(start)),
			slog.String("ip", c.RealIP()),
			slog.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
		return nil
	}
}

// requestLevel is the level of a request's line: Error for a 5xx, except a
// 503, which says plainly that the database is unavailable; its cause is
// logged once per interval as "database unavailable", and the line stays
// at Info, one per request, so that the access log remains complete.
func requestLevel(status int) slog.Level {
	if status >= 500 && status != http.StatusServiceUnavailable {
		return slog.LevelError
	}
	return slog.LevelInfo
}

// recoverPanics turns a panic in a handler into a 500 and a logged stack.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("panic in handler", "path", c.Request().URL.Path, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// loadSession finds the signed-in user, if any; it never refuses a request.
func (s *Server) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ck, err := c.Cookie(sessionCookie)
		if err != nil || ck.Value == "" {
			return next(c)
		}
		now := s.clock.Now()
		sess, user, err := models.SessionUser(s.requestDB(c), ck.Value, now, s.cfg.Session.IdleTimeout)
		switch {
		case errors.Is(err, models.ErrNotFound):
			s.clearSessionCookie(c)
			return next(c)
		case err != nil:
			return fmt.Errorf("load session: %w", err)
		}
		// Record activity at most once a minute: reading pages should not
		// write. A page asking for itself again (htmx's GETs here are its
		// polls) is no activity of a person's: a tab left open does not
		// keep its session from ending when idle.
		poll := c.Request().Method == http.MethodGet && c.Request().Header.Get("HX-Request") == "true"
		if !poll && now.Sub(sess.LastSeenAt) > time.Minute {
			if err := models.TouchSession(s.requestDB(c), sess.ID, now); err != nil {
				s.log.Warn("touch session", "err", err)
			}
		}
		c.Set(ctxUser, user)
		c.Set(ctxSession, sess)
		return next(c)
	}
}

// requireUser sends a visitor without a session to the sign-in page.
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if currentUser(c) != nil {
			return next(c)
		}
		r := c.Request()
		if r.Header.Get("HX-Request") == "true" {
			// htmx asked for a fragment (a status polling itself, a
			// button's post): after signing in, the person wants the page
			// they were on, which htmx names in HX-Current-URL.
			c.Response().Header().Set("HX-Redirect", loginFor(currentPage(r)))
			return c.NoContent(http.StatusUnauthorized)
		}
		next := ""
		if r.Method == http.MethodGet {
			next = r.URL.RequestURI()
		}
		return c.Redirect(http.StatusSeeOther, loginFor(next))
	}
}

// loginFor is the sign-in page that leads on to next, a path on this site
// ("" or "/" for the overview).
func loginFor(next string) string {
	if next = safeNext(next); next == "/" {
		return "/login"
	}
	return "/login?next=" + url.QueryEscape(next)
}

// currentPage is the path and query of the page an htmx request came from,
// "" without HX-Current-URL. Its host is not compared with ours (a proxy
// may rename it): only its path is kept, and loginFor keeps that on this site.
func currentPage(r *http.Request) string {
	u, err := url.Parse(r.Header.Get("HX-Current-URL"))
	if err != nil || u.Path == "" {
		return ""
	}
	return u.RequestURI()
}

// requireRole refuses, with 403 and an audit entry, a user below min.
func (s *Server) requireRole(min models.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			u := currentUser(c)
			if u != nil && u.Role.AtLeast(min) {
				return next(c)
			}
			s.audit(c, action.AccessDenied, c.Request().Method+" "+c.Request().URL.Path, models.OutcomeDenied,
				fmt.Sprintf("needs role %s", min))
			return errForbidden(fmt.Sprintf("This needs %s. Ask an admin if you need it.", rolesFrom(min)))
		}
	}
}

// rolesFrom names the roles at least min, in words: there is nothing
// "higher" than admin.
func rolesFrom(min models.Role) string {
	if min == models.RoleAdmin {
		return "the admin role"
	}
	return "the " + string(min) + " or admin role"
}

// requireToken admits API calls that carry a live bearer token.
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		auth := c.Request().Header.Get(echo.HeaderAuthorization)
		scheme, token, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="syncdesk"`)
			return errUnauthorized("send an API token as Authorization: Bearer TOKEN")
		}
		t, err := models.APITokenBySecret(s.requestDB(c), strings.TrimSpace(token))
		if errors.Is(err, models.ErrNotFound) {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="syncdesk", error="invalid_token"`)
			return errUnauthorized("the API token is unknown or revoked")
		}
		if err != nil {
			return err
		}
		now := s.clock.Now()
		if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
			_ = models.TouchAPIToken(s.requestDB(c), t.ID, now)
		}
		c.Set(ctxToken, t)
		return next(c)
	}
}

// metricsAuth asks for the metrics token when access is "token".
func (s *Server) metricsAuth(next echo.HandlerFunc) echo.HandlerFunc {
	want, _ := config.ExpandEnv(s.cfg.Metrics.Token)
	return func(c echo.Context) error {
		if s.cfg.Metrics.Access == "token" {
			got := strings.TrimPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
			if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="syncdesk metrics"`)
				return errUnauthorized("send the metrics token as Authorization: Bearer TOKEN")
			}
		}
		return next(c)
	}
}

func currentUser(c echo.Context) *models.User {
	u, _ := c.Get(ctxUser).(*models.User)
	return u
}

// actor names who is acting, for the audit log.
func actor(c echo.Context) (string, *int64) {
	if u := currentUser(c); u != nil {
		return u.Email, &u.ID
	}
	if t, ok := c.Get(ctxToken).(*models.APIToken); ok {
		return "api:" + t.Name, nil
	}
	return "anonymous", nil
}

// audit appends an entry for the current request. A failure to audit is
// logged loudly; it does not undo what already happened. The write is
// detached from the request: what a request did is recorded even when its
// client has gone away before the entry is written.
func (s *Server) audit(c echo.Context, action, target, outcome, detail string) {
	who, uid := actor(c)
	err := models.Audit(s.detachedDB(c), models.AuditEntry{At: s.clock.Now(), Actor: who, UserID: uid, Action: action,
		Target: target, Outcome: outcome, IP: c.RealIP(), Detail: detail})
	if err != nil {
		s.log.Error("audit write failed", "action", action, "err", err)
	}
}

// auditEnd audits an action as err ended it, and returns err: a refusal
// in words as denied with its reason, a success with detail. Any other
// error is the answer's and the request log's, not the audit log's.
func (s *Server) auditEnd(c echo.Context, action, target string, err error, detail string) error {
	var refused *models.InvalidError
	switch {
	case errors.As(err, &refused):
		s.audit(c, action, target, models.OutcomeDenied, refused.Reason)
	case err == nil:
		s.audit(c, action, target, models.OutcomeSuccess, detail)
	}
	return err
}
