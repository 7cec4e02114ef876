package web

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/views"
)

// render writes a templ component with status 200.
func (s *Server) render(c echo.Context, comp templ.Component) error {
	return s.renderStatus(c, http.StatusOK, comp)
}

// renderStatus writes a templ component with the given status.
func (s *Server) renderStatus(c echo.Context, status int, comp templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response())
}

// page builds the layout's view model for the current request.
func (s *Server) page(c echo.Context, title, active string) views.Page {
	p := views.Page{Title: title, Active: active, CSRF: csrfToken(c), Now: s.clock.Now(), Version: s.version}
	if u := currentUser(c); u != nil {
		p.Viewer = views.Viewer{Email: u.Email, Name: u.Name, Role: string(u.Role)}
	}
	p.Flash = flashes[c.QueryParam("done")]
	if p.Viewer.Email != "" {
		p.Paused = s.pausedServices(c)
	}
	return p
}

// pausedServices lists the paused services for the banner, from the
// Pauser's cache. A failed read shows the last known pauses (the Pauser logs it).
func (s *Server) pausedServices(c echo.Context) []views.PausedService {
	if s.pauser == nil {
		return nil
	}
	pauses, _ := s.pauser.List(c.Request().Context())
	out := make([]views.PausedService, len(pauses))
	for i, ps := range pauses {
		out[i] = views.PausedService{Name: ps.Service, By: ps.PausedBy, Since: ps.PausedAt, Reason: ps.Reason}
	}
	return out
}

// flashes are the confirmations a redirect can ask for with ?done=KEY. Only
// these fixed texts can appear, so a crafted URL cannot put words on a page.
var flashes = map[string]string{
	"service-paused":         "Sending is paused. Links to the service wait in the queue; nothing is lost.",
	"service-already-paused": "That service was already paused; its first pause stands.",
	"service-resumed":        "Sending is resumed. Waiting links go out within a few seconds.",
	"service-not-paused":     "That service was not paused; nothing changed.",
	"role-changed":           "The role is changed; it applies from their next page.",
	"user-disabled":          "The user is disabled and signed out everywhere.",
	"token-revoked":          "The token is revoked; calls that use it now get 401.",
	"link-failed":            "The link is marked failed; it will not be retried until someone asks.",
	"link-recreated":         "A new create is queued, with a new idempotency key.",
	"bulk-retry":             "The links are queued; they leave this page as they succeed.",
	"event-replayed":         "The event was replayed. The outcome and note below are from this replay.",
	"task-started":           "The task was started. Its outcome shows here when it finishes: reload the page in a moment.",
	"task-busy":              "That task is already running, so it was not started a second time.",
	"runs-started":           "A reconciliation run was started for every service. They are listed below; open one to follow it.",
	"runs-started-some-busy": "A reconciliation run was started for every service that was not already being reconciled. They are listed below.",
	"runs-all-busy":          "Every service is already being reconciled, so no new run was started. The runs going are listed below.",
}
