package web

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/sync/inbox"
)

// maxHookBody bounds a webhook's body; providers send far less.
const maxHookBody = 1 << 20

// receiveHook answers POST /hooks/{service}: outside login and CSRF, the
// signature is the authentication. 2xx for a new or duplicate event (so the
// provider stops re-sending), 401 for a bad signature, 5xx when the effect
// failed and the provider should try again.
func (s *Server) receiveHook(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxHookBody+1))
	if err != nil {
		return errBadRequest("could not read the body")
	}
	if len(body) > maxHookBody {
		return &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", maxHookBody)}
	}
	r := c.Request()
	res, err := s.inbox.Receive(r.Context(), c.Param("service"),
		inbox.Delivery{Method: r.Method, URL: s.hookURL(c), Header: r.Header, Body: body})
	if err != nil {
		return err // problemFor: 401 rejected, 400 unreadable, 5xx when the effect failed
	}
	return c.JSON(http.StatusOK, res)
}

// hookURL is the URL the provider called, which HubSpot signs: the
// service's webhook.url when a proxy in front changes it, else this
// server's origin as the caller saw it (https behind a trusted proxy that
// says so) and the request's path and query, as sent.
func (s *Server) hookURL(c echo.Context) string {
	r := c.Request()
	if svc, ok := s.cfg.Services[c.Param("service")]; ok && svc.Webhook != nil && svc.Webhook.URL != "" {
		if r.URL.RawQuery != "" && !strings.Contains(svc.Webhook.URL, "?") {
			return svc.Webhook.URL + "?" + r.URL.RawQuery
		}
		return svc.Webhook.URL
	}
	scheme, host := s.ownOrigin(c)
	return scheme + "://" + host + r.RequestURI
}

// apiReplayEvent answers POST /api/v1/events/{service}/{id}/replay: apply a
// stored event's effect again, deliberately. Audited.
func (s *Server) apiReplayEvent(c echo.Context) error {
	service, id := c.Param("service"), c.Param("id")
	who, _ := actor(c)
	res, err := s.inbox.Replay(c.Request().Context(), service, id, who)
	if err != nil {
		s.audit(c, action.EventReplay, service+"/"+id, models.OutcomeFailure, err.Error())
		return err
	}
	s.audit(c, action.EventReplay, service+"/"+id, models.OutcomeSuccess, res.Outcome+": "+res.Note)
	return c.JSON(http.StatusOK, res)
}
