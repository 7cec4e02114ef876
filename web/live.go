package web

import (
	"io"
	"net/http"
	"net/url"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/views"
)

// headerLiveVersion carries a live region's version: static/js/live.js
// sends the one the page holds, and an answer names the one it brings.
const headerLiveVersion = "X-Live-Version"

// livePoll reports whether a request is a page's live region asking for
// itself again (views.Live): htmx names the region it will swap in HX-Target.
// The poll goes through the page's own route, so it has the page's sign-in
// and role checks and reads what the page reads.
func livePoll(c echo.Context) bool {
	h := c.Request().Header
	return h.Get("HX-Request") == "true" && h.Get("HX-Target") == views.LiveID
}

// renderLive answers a poll with the page's live region alone, or with 204
// when it reads as the version the page already holds: htmx swaps nothing
// then, and a ticked box or an open detail stays as the person left it.
func (s *Server) renderLive(c echo.Context, comp templ.Component) error {
	f := &views.LiveFragment{}
	if err := comp.Render(views.WithLiveFragment(c.Request().Context(), f), io.Discard); err != nil {
		return err
	}
	if !f.Found || c.Request().Header.Get(headerLiveVersion) == f.Version {
		return c.NoContent(http.StatusNoContent)
	}
	c.Response().Header().Set(headerLiveVersion, f.Version)
	return c.HTMLBlob(http.StatusOK, f.HTML)
}

// flashParams are the query parameters that ask for a one-time
// confirmation (flashFor): a poll must not carry them, nor say it again.
var flashParams = []string{"done", "queued", "busy", "gone"}

// liveURL is a page's address as its live region polls it.
func liveURL(u *url.URL) string {
	q := u.Query()
	for _, n := range flashParams {
		q.Del(n)
	}
	if len(q) == 0 {
		return u.Path
	}
	return u.Path + "?" + q.Encode()
}
