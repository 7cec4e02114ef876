package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/schedule"
	"github.com/syncdesk/syncdesk/views"
)

// statusError is an error with the HTTP status and the words to show for it.
type statusError struct {
	status  int
	message string
}

func (e *statusError) Error() string { return e.message }

func errForbidden(msg string) error    { return &statusError{http.StatusForbidden, msg} }
func errUnauthorized(msg string) error { return &statusError{http.StatusUnauthorized, msg} }
func errBadRequest(msg string) error   { return &statusError{http.StatusBadRequest, msg} }

// statusClientClosed answers a request whose client went away before it was
// served: nginx's 499, as no standard status says it. It is logged at Info,
// as any status below 500.
const statusClientClosed = 499

// problemFor maps any error to a status and a message a person can read. It is
// the one place where errors become HTTP statuses.
func problemFor(err error) views.Problem {
	var se *statusError
	var he *echo.HTTPError
	var inv *models.InvalidError
	var down *models.UnavailableError
	switch {
	case errors.As(err, &se):
		return views.Problem{Status: se.status, Title: titleFor(se.status), Message: se.message}
	case errors.Is(err, context.Canceled):
		// A query ended because its request's client went away: no one reads
		// the answer, and nothing here failed. Before the outage cases: a
		// cancelled query can also end its connection.
		return views.Problem{Status: statusClientClosed, Title: "Request cancelled",
			Message: "The request was cancelled before it finished."}
	case errors.As(err, &inv):
		return views.Problem{Status: http.StatusBadRequest, Title: titleFor(http.StatusBadRequest), Message: inv.Reason}
	case models.AsUnavailable(err, &down):
		return views.Problem{Status: http.StatusServiceUnavailable, Title: titleFor(http.StatusServiceUnavailable), Message: down.Reason}
	case models.Contended(err):
		// Two requests wrote the same records at once (bulk batches that
		// share records, in opposite orders): the database undid this one.
		// It changed nothing, and goes through when sent again.
		return views.Problem{Status: http.StatusServiceUnavailable, Title: titleFor(http.StatusServiceUnavailable),
			Message: "Another request was writing the same records at the same moment, so this one changed nothing. Send it again."}
	case errors.Is(err, models.ErrNotFound):
		return views.Problem{Status: http.StatusNotFound, Title: "Not found", Message: sentence(err.Error())}
	case errors.Is(err, models.ErrConflict):
		return views.Problem{Status: http.StatusConflict, Title: "Already exists", Message: sentence(err.Error())}
	case errors.Is(err, models.ErrRunActive):
		return views.Problem{Status: http.StatusConflict, Title: "Already running",
			Message: "A reconciliation of this service is already running; try again when it has ended."}
	case errors.Is(err, reconcile.ErrRunElsewhere):
		return views.Problem{Status: http.StatusConflict, Title: "Running elsewhere", Message: sentence(err.Error())}
	case errors.Is(err, schedule.ErrStopped):
		return views.Problem{Status: http.StatusServiceUnavailable, Title: titleFor(http.StatusServiceUnavailable),
			Message: "The scheduler did not take the task: it is stopping or has not started. Reload the page in a minute and try again."}
	case errors.Is(err, reconcile.ErrClosed):
		return views.Problem{Status: http.StatusServiceUnavailable, Title: titleFor(http.StatusServiceUnavailable),
			Message: sentence(err.Error())}
	case errors.Is(err, inbox.ErrRejected):
		return views.Problem{Status: http.StatusUnauthorized, Title: titleFor(http.StatusUnauthorized), Message: sentence(err.Error())}
	case errors.Is(err, inbox.ErrBadEvent):
		// Verified, but it cannot be identified or stored: a re-send of the
		// same delivery cannot help, so not a 5xx.
		return views.Problem{Status: http.StatusBadRequest, Title: "Cannot read the event", Message: sentence(err.Error())}
	case errors.Is(err, inbox.ErrUnreadableStored):
		return views.Problem{Status: http.StatusUnprocessableEntity, Title: "Cannot read the event", Message: sentence(err.Error())}
	case errors.Is(err, inbox.ErrNoWebhooks):
		return views.Problem{Status: http.StatusConflict, Title: "Nothing to apply it with",
			Message: "syncdesk no longer takes webhooks from this service, so it has nothing to apply this event with. " +
				"An admin can add the service's webhook settings back."}
	case errors.As(err, &he):
		msg, _ := he.Message.(string)
		if he.Code == http.StatusNotFound {
			msg = "There is no page at this address."
		}
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		return views.Problem{Status: he.Code, Title: titleFor(he.Code), Message: sentence(msg)}
	}
	return unexpected
}

// unexpected is the answer to an error nothing above names.
var unexpected = views.Problem{Status: http.StatusInternalServerError, Title: "Something went wrong",
	Message: "syncdesk hit an unexpected error. It has been logged; try again, and tell an admin if it keeps happening."}

// titleFor names a status in a support person's words, not HTTP's.
func titleFor(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return "That didn't work"
	case http.StatusUnauthorized:
		return "Please sign in"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusNotFound:
		return "Not found"
	case http.StatusMethodNotAllowed:
		return "Not possible here"
	case http.StatusConflict:
		return "Already in progress"
	case http.StatusTooManyRequests:
		return "Too many tries"
	case http.StatusServiceUnavailable:
		return "Not available right now"
	}
	return "Something went wrong"
}

func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// handleError answers JSON under /api/ and an HTML page everywhere else.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p := problemFor(err)
	if p.Status == statusClientClosed && c.Request().Context().Err() == nil {
		p = unexpected // cancelled, but not by its client (a stop, say): a failure to log
	}
	s.logFailure(c, p, err)
	if p.Status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", retryAfterSeconds)
	}
	if strings.HasPrefix(c.Request().URL.Path, "/api/") || strings.HasPrefix(c.Request().URL.Path, "/hooks/") {
		_ = c.JSON(p.Status, map[string]string{"error": p.Message})
		return
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(p.Status)
		return
	}
	section := sectionOf(c.Request().URL.Path)
	p.Back = backTo(c, section)
	_ = s.renderStatus(c, p.Status, views.ErrorPage(s.page(c, p.Title, section), p))
}

// retryAfterSeconds is the Retry-After of a 503: long enough that clients
// do not hammer a database that is down, short enough to notice it is back.
const retryAfterSeconds = "5"

// logFailure logs a 5xx. A database outage is logged without the path: every
// request meets the same failure, and the log (which writes a repeated
// failure once per interval, with a count) should see it as one.
func (s *Server) logFailure(c echo.Context, p views.Problem, err error) {
	var down *models.UnavailableError
	switch {
	case p.Status == http.StatusServiceUnavailable && models.AsUnavailable(err, &down):
		s.log.Error("database unavailable", "reason", down.Reason, "err", err)
	case p.Status >= 500:
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
}

// sectionOf is the menu entry a path belongs to ("/links" for
// "/links/12/sync"), or "" when the path is in none.
func sectionOf(path string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch first {
	case "":
		return "/"
	case "records":
		return "/links"
	case "tokens":
		return "/users"
	}
	for _, n := range views.Nav {
		if n.Path == "/"+first {
			return n.Path
		}
	}
	return ""
}

// backTo is where "Go back" leads: the page the person came from when it is
// on this site (and is not the page that failed), else the section's list.
func backTo(c echo.Context, section string) string {
	req := c.Request()
	if ref, err := url.Parse(req.Referer()); err == nil && ref.Host == req.Host && ref.Path != "" &&
		(ref.Scheme == "http" || ref.Scheme == "https") && ref.RequestURI() != req.URL.RequestURI() &&
		!strings.HasPrefix(ref.Path, "//") {
		return ref.RequestURI()
	}
	if section == "" {
		return "/"
	}
	return section
}
