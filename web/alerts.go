package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/views"
)

// adminPages are the pages an incident may point to that only an admin
// opens (see routes.go), by their words: another person is told who acts
// there, rather than sent to a page that refuses them.
var adminPages = map[string]string{"/schedules": "Schedules", "/users": "Users"}

// resolvedShown is how many ended incidents the alerts page lists.
const resolvedShown = 30

// listAlerts shows the open incidents and the latest ended ones, each with
// its notifications. Anyone signed in may read it.
func (s *Server) listAlerts(c echo.Context) error {
	db := s.requestDB(c)
	open, err := models.OpenIncidents(db)
	if err != nil {
		return err
	}
	resolved, err := models.ResolvedIncidents(db, resolvedShown)
	if err != nil {
		return err
	}
	v := views.AlertsView{Channels: s.cfg.Alerts.ChannelNames(), Every: s.cfg.Alerts.WithDefaults().Every}
	if v.Open, err = incidentRows(db, open); err != nil {
		return err
	}
	if u := currentUser(c); u == nil || u.Role != models.RoleAdmin {
		for i := range v.Open {
			v.Open[i].AdminPage = adminPages[v.Open[i].URL]
		}
	}
	if v.Resolved, err = incidentRows(db, resolved); err != nil {
		return err
	}
	return s.render(c, views.AlertsPage(s.page(c, "Alerts", "/alerts"), v))
}

func incidentRows(db *gorm.DB, incidents []models.Incident) ([]views.IncidentRow, error) {
	ids := make([]int64, len(incidents))
	for i, inc := range incidents {
		ids[i] = inc.ID
	}
	sent, err := models.NotificationsOf(db, ids)
	if err != nil {
		return nil, err
	}
	out := make([]views.IncidentRow, len(incidents))
	for i, inc := range incidents {
		row := views.IncidentRow{ID: inc.ID, Rule: inc.Rule, Subject: inc.Subject, Title: inc.Title, Text: inc.Text,
			ResolvedText: inc.ResolvedText, URL: inc.URL,
			OpenedAt: inc.OpenedAt, ResolvedAt: orZero(inc.ResolvedAt), AcknowledgedBy: inc.AcknowledgedBy,
			AcknowledgedAt: orZero(inc.AcknowledgedAt), AcknowledgeURL: fmt.Sprintf("/alerts/%d/acknowledge", inc.ID)}
		for _, n := range sent[inc.ID] {
			row.Notifications = append(row.Notifications, views.NotificationRow{Channel: n.Channel, State: n.State, Status: n.Status,
				Tries: n.Tries, SentAt: orZero(n.SentAt), NextAt: n.NextAt, LastError: n.LastError})
		}
		out[i] = row
	}
	return out, nil
}

func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// acknowledgeIncident puts an operator's name on an open incident, so the
// others know someone is on it. Audited.
func (s *Server) acknowledgeIncident(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return fmt.Errorf("incident %q: %w", c.Param("id"), models.ErrNotFound)
	}
	who, _ := actor(c)
	inc, acknowledged, err := models.AcknowledgeIncident(s.requestDB(c), id, who, s.clock.Now())
	if err != nil {
		return err
	}
	target := fmt.Sprintf("incident %d", id)
	if !acknowledged {
		why := "the incident is over"
		if inc.AcknowledgedBy != "" {
			why = "already acknowledged by " + inc.AcknowledgedBy
		}
		s.audit(c, action.IncidentAcknowledge, target, models.OutcomeFailure, why)
		return c.Redirect(http.StatusSeeOther, "/alerts?done=incident-already-acknowledged")
	}
	s.audit(c, action.IncidentAcknowledge, target, models.OutcomeSuccess, inc.Title)
	return c.Redirect(http.StatusSeeOther, "/alerts?done=incident-acknowledged")
}
