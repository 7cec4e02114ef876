package web

import (
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/views"
)

// timelineSize is how many entries a record's page shows: the newest.
const timelineSize = 100

func (s *Server) showRecord(c echo.Context) error {
	rec, links, err := s.recordAndLinks(c)
	if err != nil {
		return err
	}
	v, err := s.recordView(c, rec, links)
	if err != nil {
		return err
	}
	return s.render(c, views.RecordPage(s.page(c, rec.LocalType+" "+rec.LocalID, "/links"), v))
}

func (s *Server) recordAndLinks(c echo.Context) (*models.Record, []models.Link, error) {
	rec, err := models.RecordByKey(s.requestDB(c), c.Param("type"), c.Param("id"))
	if err != nil {
		return nil, nil, err
	}
	links, err := models.RecordLinks(s.requestDB(c), rec.LocalType, rec.LocalID)
	return rec, links, err
}

// recordView is the record's page: its links, its timeline, the payload.
func (s *Server) recordView(c echo.Context, rec *models.Record, links []models.Link) (views.RecordView, error) {
	v := views.RecordView{LocalType: rec.LocalType, LocalID: rec.LocalID, Payload: s.prettyRedacted(rec.Payload), UpdatedAt: rec.UpdatedAt,
		CanCheck: s.rec != nil && s.rec.Checkable(rec.LocalType), DeletedAt: rec.DeletedAt}
	service := map[int64]string{}
	for _, l := range links {
		v.Links = append(v.Links, linkRow(l))
		service[l.ID] = l.ExternalService
	}
	entries, more, err := models.RecordTimeline(s.requestDB(c), rec.LocalType, rec.LocalID, links, timelineSize)
	if err != nil {
		return v, err
	}
	v.TimelineMore = more
	for _, e := range entries {
		v.Timeline = append(v.Timeline, s.timelineRow(e, service))
	}
	return v, nil
}

// timelineRow says one entry in words. What it shows was redacted when it
// was written (attempt excerpts and errors, event notes); the audit detail
// passes the redactor here, as the audit page's does.
func (s *Server) timelineRow(e models.TimelineEntry, service map[int64]string) views.TimelineRow {
	row := views.TimelineRow{At: e.At, Kind: e.Kind}
	switch {
	case e.Attempt != nil:
		a := e.Attempt
		row.LinkID, row.Service, row.URL = a.LinkID, service[a.LinkID], views.LinkURL(a.LinkID)
		row.What = a.Operation + ": " + attemptOutcome(a)
		row.Detail = a.Error
		if strings.HasPrefix(a.Operation, "reconcile.") {
			row.Detail = a.RequestExcerpt
		}
	case e.Event != nil:
		ev := e.Event
		row.Service, row.URL = ev.Provider, eventURL(ev.Provider, ev.EventID)
		row.What = ev.EventType + ": " + ev.Outcome
		row.Detail = ev.Error
		if ev.LinkID != nil {
			row.LinkID = *ev.LinkID
		}
	case e.Audit != nil:
		a := e.Audit
		row.What = views.ActionLabel(a.Action) + " by " + a.Actor
		if a.Outcome != models.OutcomeSuccess {
			row.What += " (" + a.Outcome + ")"
		}
		row.Detail = s.redact.Text(a.Detail)
	}
	return row
}

func attemptOutcome(a *models.Attempt) string {
	words := map[models.Outcome]string{models.OutcomeOK: "OK", models.OutcomeTemporary: "temporary failure",
		models.OutcomePermanent: "permanent failure", models.OutcomeAmbiguous: "outcome unknown"}
	out := words[a.Outcome]
	if out == "" {
		out = string(a.Outcome)
	}
	if a.HTTPCode > 0 {
		out += fmt.Sprintf(" (HTTP %d)", a.HTTPCode)
	}
	return out
}

// checkRecord asks each service that takes the record's type for the
// object carrying our key and shows how it differs from the record, without
// changing anything. It calls the providers, with their credentials: an
// operator's button, audited.
func (s *Server) checkRecord(c echo.Context) error {
	if s.rec == nil {
		return errBadRequest("Reconciliation is not available on this instance, so the providers cannot be asked.")
	}
	rec, links, err := s.recordAndLinks(c)
	if err != nil {
		return err
	}
	checks := s.rec.Check(c.Request().Context(), *rec, links)
	s.audit(c, action.RecordCheck, rec.LocalType+"/"+rec.LocalID, models.OutcomeSuccess, checkSummary(checks))
	v, err := s.recordView(c, rec, links)
	if err != nil {
		return err
	}
	v.Checked = true
	for _, ch := range checks {
		cv := views.CheckView{Service: ch.Service, Key: ch.Key, LinkID: ch.LinkID, LinkedTo: ch.LinkedTo, Cannot: ch.Cannot}
		for _, o := range ch.Objects {
			co := views.CheckObject{ID: o.ID, Linked: o.ID != "" && o.ID == ch.LinkedTo}
			for _, d := range o.Differences {
				co.Differences = append(co.Differences, views.FieldDiff{Field: d.Field, Here: d.Here, There: d.There})
			}
			cv.Objects = append(cv.Objects, co)
		}
		v.Checks = append(v.Checks, cv)
	}
	return s.render(c, views.RecordPage(s.page(c, rec.LocalType+" "+rec.LocalID, "/links"), v))
}

// checkSummary is the audit detail of a check: what each service answered.
func checkSummary(checks []reconcile.Checked) string {
	var parts []string
	for _, ch := range checks {
		switch {
		case ch.Cannot != "":
			parts = append(parts, ch.Service+": not compared")
		case len(ch.Objects) == 0:
			parts = append(parts, ch.Service+": none found")
		default:
			n := 0
			for _, o := range ch.Objects {
				n += len(o.Differences)
			}
			parts = append(parts, fmt.Sprintf("%s: %d object(s), %d field(s) differ", ch.Service, len(ch.Objects), n))
		}
	}
	return strings.Join(parts, "; ")
}
