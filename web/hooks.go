package web

import (
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
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
	res, err := s.inbox.Receive(c.Request().Context(), c.Param("service"), c.Request().Header, body)
	if err != nil {
		return err // problemFor: 401 rejected, 400 unreadable, 5xx when the effect failed
	}
	return c.JSON(http.StatusOK, res)
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
