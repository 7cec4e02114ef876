package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/sync/source"
	"github.com/syncdesk/syncdesk/views"
)

// sourceCards are the configured sources as the services page shows them.
func (s *Server) sourceCards(c echo.Context) ([]views.SourceCard, error) {
	states, err := s.sources.States(c.Request().Context())
	if err != nil {
		return nil, err
	}
	cards := make([]views.SourceCard, 0, len(states))
	for _, st := range states {
		card := views.SourceCard{Name: st.Name, Mode: st.Mode, Where: st.Where, State: st.State, Cursor: st.Cursor,
			Lag: st.Lag, ReadAt: st.ReadAt, RowsRead: st.RowsRead, Refused: st.Refused, LastRefusal: st.LastRefusal,
			Skipped: st.Skipped, LastSkip: st.LastSkip, Untimed: st.Untimed, LastError: st.LastError}
		if st.State == source.Paused {
			card.Pause = &views.PausedService{Name: st.Name, By: st.PausedBy, Since: st.PausedAt, Reason: st.PauseReason}
		}
		cards = append(cards, card)
	}
	return cards, nil
}

func (s *Server) pauseSource(c echo.Context) error {
	name := c.Param("name")
	who, _ := actor(c)
	paused, err := s.sources.Pause(c.Request().Context(), name, who, c.FormValue("reason"))
	var inv *models.InvalidError
	switch {
	case errors.As(err, &inv):
		return s.renderServices(c, http.StatusBadRequest, inv.Reason)
	case err != nil:
		return err
	case !paused:
		s.audit(c, action.SourcePause, name, models.OutcomeSuccess, "already paused")
		return c.Redirect(http.StatusSeeOther, "/services?done=source-already-paused")
	}
	s.audit(c, action.SourcePause, name, models.OutcomeSuccess, c.FormValue("reason"))
	return c.Redirect(http.StatusSeeOther, "/services?done=source-paused")
}

func (s *Server) resumeSource(c echo.Context) error {
	name := c.Param("name")
	who, _ := actor(c)
	was, err := s.sources.Resume(c.Request().Context(), name, who)
	if err != nil {
		return err
	}
	return s.resumed(c, action.SourceResume, "source", name, was)
}
