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
	return p
}

// flashes are the confirmations a redirect can ask for with ?done=KEY. Only
// these fixed texts can appear, so a crafted URL cannot put words on a page.
var flashes = map[string]string{
	"user-disabled": "The user is disabled and signed out everywhere.",
	"token-revoked": "The token is revoked; calls that use it now get 401.",
}
