package web

import (
	"errors"
	"net/http"
	"net/mail"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/views"
)

// Words shown on the sign-in page. An unknown account and a wrong password get
// the same message and status, so the form does not tell which accounts exist.
const (
	msgBadLogin  = "Email or password is incorrect."
	msgThrottled = "Too many failed sign-ins. Wait %s and try again, or ask an admin."
	msgBusy      = "Too many sign-ins at this moment. Try again in a few seconds."
)

func (s *Server) showLogin(c echo.Context) error {
	if currentUser(c) != nil {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	return s.render(c, views.LoginPage(views.Login{Next: safeNext(c.QueryParam("next")), CSRF: csrfToken(c), Version: s.version}))
}

func (s *Server) login(c echo.Context) error {
	email := strings.ToLower(strings.TrimSpace(c.FormValue("email")))
	password := c.FormValue("password")
	next := safeNext(c.FormValue("next"))
	view := views.Login{Email: email, Next: next, CSRF: csrfToken(c), Version: s.version}
	if email == "" || password == "" || len(email) > 254 || len(password) > 1024 {
		view.Error = "Enter your email and your password."
		return s.renderStatus(c, http.StatusBadRequest, views.LoginPage(view))
	}
	leave, refused, err := s.takeCheckTurn(c, email)
	if err != nil {
		return err
	}
	if refused != nil {
		view.Error = refused.message
		return s.renderStatus(c, refused.status, views.LoginPage(view))
	}
	defer leave()
	user, err := models.UserByEmail(s.requestDB(c), email)
	switch {
	case errors.Is(err, models.ErrNotFound):
		models.SpendPasswordCheck(password)
	case err != nil:
		return err
	}
	if err != nil || !models.CheckPassword(user.PasswordHash, password) || user.Disabled() {
		s.auditLogin(c, email, models.OutcomeFailure, nil)
		view.Error = msgBadLogin
		return s.renderStatus(c, http.StatusUnauthorized, views.LoginPage(view))
	}
	// A fresh session id at every sign-in: a cookie planted before it is worthless.
	if old, err := c.Cookie(sessionCookie); err == nil {
		_ = models.DeleteSession(s.requestDB(c), old.Value)
	}
	token, err := models.CreateSession(s.requestDB(c), user.ID, c.RealIP(), c.Request().UserAgent(), s.clock.Now(), s.cfg.Session.AbsoluteTimeout)
	if err != nil {
		return err
	}
	s.setSessionCookie(c, token)
	s.clearLoginCSRFCookie(c) // the new session's own CSRF token takes over
	s.rememberDevice(c, user.ID)
	// The users page's "last sign-in". Not worth refusing a sign-in over.
	if err := models.RecordSignIn(s.requestDB(c), user.ID, s.clock.Now()); err != nil {
		s.log.Warn("record last sign-in", "error", err)
	}
	s.auditLogin(c, email, models.OutcomeSuccess, &user.ID)
	return c.Redirect(http.StatusSeeOther, next)
}

func (s *Server) logout(c echo.Context) error {
	if ck, err := c.Cookie(sessionCookie); err == nil {
		// Detached from the request: a person who signs out and closes the
		// tab at once must not leave the session alive behind the cookie.
		if err := models.DeleteSession(s.detachedDB(c), ck.Value); err != nil {
			return err
		}
	}
	s.audit(c, action.Logout, currentUser(c).Email, models.OutcomeSuccess, "")
	s.clearSessionCookie(c)
	return c.Redirect(http.StatusSeeOther, "/login")
}

// loginThrottled reports whether an account or a client IP has failed too
// often within the window. Failures are counted from the audit log, which
// every instance shares.
func (s *Server) loginThrottled(db *gorm.DB, email, ip string) (bool, error) {
	since := s.clock.Now().Add(-s.cfg.Login.Window)
	n, err := models.CountFailures(db, action.Login, loginTarget(email), "", since)
	if err != nil {
		return false, err
	}
	if n >= int64(s.cfg.Login.MaxFailures) {
		return true, nil
	}
	n, err = models.CountFailures(db, action.Login, "", ip, since)
	return n >= int64(s.cfg.Login.MaxFailuresPerIP), err
}

func (s *Server) auditLogin(c echo.Context, email, outcome string, uid *int64) {
	actor := email
	if uid == nil {
		actor = "anonymous"
	}
	// Detached from the request: the throttle counts failed sign-ins from
	// these entries, and a guesser who hangs up at once must still be counted.
	err := models.Audit(s.detachedDB(c), models.AuditEntry{At: s.clock.Now(), Actor: actor, UserID: uid, Action: action.Login,
		Target: loginTarget(email), Outcome: outcome, IP: c.RealIP()})
	if err != nil {
		s.log.Error("audit write failed", "action", action.Login, "err", err)
	}
}

// loginTarget is what the audit log keeps of the email typed at a sign-in:
// the address, or a placeholder when it does not read as one — whoever
// types their password into the email field must not find it in a log
// every viewer reads.
func loginTarget(email string) string {
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || a.Name != "" {
		return "(not an email address)"
	}
	return email
}

// setSessionCookie gives the browser the session for as long as its
// absolute timeout, as a Max-Age: a lifetime the browser counts on its own
// clock. An Expires date would be read from syncdesk's clock (the
// database's), and a browser whose clock is ahead would drop the cookie
// early, or at once.
func (s *Server) setSessionCookie(c echo.Context, token string) {
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.overTLS(c),
		MaxAge: int(s.cfg.Session.AbsoluteTimeout.Seconds())})
}

func (s *Server) clearSessionCookie(c echo.Context) {
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.overTLS(c), MaxAge: -1})
}

// safeNext keeps a post-login redirect on this site: a path of its own,
// never a URL a browser could read as another host. Browsers drop tabs and
// newlines from a URL and read a backslash as a slash, so "/\t/evil.example"
// would take the user to evil.example: anything holding one is refused.
func safeNext(next string) string {
	if strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(next, "/") ||
		strings.HasPrefix(next, "//") || strings.HasPrefix(u.Path, "/login") {
		return "/"
	}
	return next
}
