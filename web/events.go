package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/views"
)

const eventsPageSize = 50

var eventOutcomes = []string{models.EventApplied, models.EventIgnored, models.EventFailed}

func (s *Server) listEvents(c echo.Context) error {
	vf := views.EventsFilter{Service: c.QueryParam("service"), Type: strings.TrimSpace(c.QueryParam("type")),
		Outcome: c.QueryParam("outcome"), HideIgnored: c.QueryParam("hide_ignored") == "1"}
	if vf.Outcome != "" && !slices.Contains(eventOutcomes, vf.Outcome) {
		return errBadRequest("The outcome filter must be applied, ignored or failed; clear the filters and pick one from the list.")
	}
	f := models.EventFilter{Provider: vf.Service, Type: vf.Type, Outcome: vf.Outcome, HideIgnored: vf.HideIgnored,
		Limit: eventsPageSize + 1}
	if b := c.QueryParam("before"); b != "" {
		cur, err := decodeEventCursor(b)
		if err != nil {
			return errBadRequest("The page cursor is not valid; go back to the first page.")
		}
		f.After = &cur
	}
	events, err := models.ListEvents(s.requestDB(c), f)
	if err != nil {
		return err
	}
	events, more := pageOf(events, eventsPageSize)
	types, err := s.eventTypes(c, vf.Type)
	if err != nil {
		return err
	}
	v := views.Events{Filter: vf, Services: s.eventServices(vf.Service), Types: types, Outcomes: eventOutcomes,
		NewestURL: newestURL(c, "/events", "before")}
	if v.Webhooks, err = s.eventsWebhookHealth(c, vf.Service); err != nil {
		return err
	}
	for _, e := range events {
		v.Events = append(v.Events, eventRow(e))
	}
	if more {
		v.NextURL = pageURL(c, "/events", "before", encodeEventCursor(models.CursorOf(events[len(events)-1])))
	}
	return s.render(c, views.EventsPage(s.page(c, "Webhook events", "/events"), v))
}

// eventServices are the service filter's choices: every service that takes
// webhooks, and the current choice even when it no longer does (its old
// events are still listed). Not a DISTINCT over the table, which would read
// every row.
func (s *Server) eventServices(current string) []string {
	out := s.webhookServices()
	if current != "" && !slices.Contains(out, current) {
		out = append(out, current)
	}
	return out
}

// eventsWebhookHealth is the events page's lines on refused and good
// deliveries: every service that takes webhooks, or the filtered one.
func (s *Server) eventsWebhookHealth(c echo.Context, filtered string) ([]views.WebhookHealth, error) {
	names := s.webhookServices()
	if filtered != "" {
		names = slices.DeleteFunc(names, func(n string) bool { return n != filtered })
	}
	health, err := s.webhookHealth(c, names)
	if err != nil {
		return nil, err
	}
	out := make([]views.WebhookHealth, 0, len(names))
	for _, n := range names {
		out = append(out, health[n])
	}
	return out, nil
}

// eventTypes are the type filter's choices: every type the inbox has
// stored, and the current choice.
func (s *Server) eventTypes(c echo.Context, current string) ([]string, error) {
	out, err := models.EventTypes(s.requestDB(c), maxEventTypes)
	if err != nil {
		return nil, err
	}
	if current != "" && !slices.Contains(out, current) {
		out = append(out, current)
	}
	return out, nil
}

// maxEventTypes bounds the type filter's list.
const maxEventTypes = 200

func (s *Server) showEvent(c echo.Context) error {
	return s.renderEvent(c, http.StatusOK, "")
}

// eventReplaysShown bounds the replay history on an event's page; the page
// says how many older replays it leaves out.
const eventReplaysShown = 50

// renderEvent shows the event named in the path, its first outcome and its
// replays, with the reason a replay just failed when there is one.
func (s *Server) renderEvent(c echo.Context, status int, replayErr string) error {
	service, id, err := eventParams(c)
	if err != nil {
		return err
	}
	ev, err := models.EventByID(s.requestDB(c), service, id)
	if err != nil {
		return err
	}
	v := views.EventDetail{EventRow: eventRow(*ev), Payload: prettyJSON(ev.Payload),
		ReplayURL: eventURL(service, id) + "/replay", Error: replayErr}
	if ev.LastDuplicateAt != nil {
		v.LastDuplicateAt = *ev.LastDuplicateAt
	}
	replays, total, err := models.EventReplays(s.requestDB(c), service, id, eventReplaysShown)
	if err != nil {
		return err
	}
	for _, r := range replays {
		v.Replays = append(v.Replays, views.ReplayRow{At: r.ReplayedAt, By: r.ReplayedBy, Outcome: r.Outcome, Note: r.Note})
	}
	v.OlderReplays = total - int64(len(replays))
	v.AuditURL = "/audit?" + url.Values{"action": {action.EventReplay}, "target": {service + "/" + id}}.Encode()
	return s.renderStatus(c, status, views.EventPage(s.page(c, "Webhook event", "/events"), v))
}

// replayEvent applies a stored event's effect again, on an operator's
// deliberate click. Audited either way.
func (s *Server) replayEvent(c echo.Context) error {
	service, id, err := eventParams(c)
	if err != nil {
		return err
	}
	target := service + "/" + id
	who, _ := actor(c)
	res, err := s.inbox.Replay(c.Request().Context(), service, id, who)
	if err != nil {
		s.audit(c, action.EventReplay, target, models.OutcomeFailure, err.Error())
		p := problemFor(err)
		switch {
		case p.Status == http.StatusNotFound:
			return err // no such event: the error page
		case p.Status == http.StatusInternalServerError:
			s.log.Error("replay event", "service", service, "event_id", id, "err", err)
			p.Message = "Applying its effect hit an error, so everything it did was rolled back. The error is in the audit log, under this event."
		}
		return s.renderEvent(c, p.Status, p.Message) // the event, with why it was not replayed
	}
	s.audit(c, action.EventReplay, target, models.OutcomeSuccess, res.Outcome+": "+res.Note)
	return c.Redirect(http.StatusSeeOther, eventURL(service, id)+"?done=event-replayed")
}

// eventParams reads the service and event id from the path (readableText
// has undone any escapes in them: an id may hold a "/").
func eventParams(c echo.Context) (string, string, error) {
	service, id := c.Param("service"), c.Param("id")
	if service == "" || id == "" {
		return "", "", errBadRequest("This event address is not valid; open the event from the events list.")
	}
	return service, id, nil
}

func eventURL(service, id string) string {
	return "/events/" + url.PathEscape(service) + "/" + url.PathEscape(id)
}

func eventRow(e models.ProcessedEvent) views.EventRow {
	return views.EventRow{Service: e.Provider, ID: e.EventID, Type: e.EventType, ReceivedAt: e.ReceivedAt,
		Outcome: e.Outcome, Note: e.Error, Duplicates: e.Duplicates, URL: eventURL(e.Provider, e.EventID)}
}

// prettyJSON indents a JSON payload for reading; anything else is shown as is.
func prettyJSON(raw string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(raw), "", "  "); err != nil {
		return raw
	}
	return buf.String()
}

// A page cursor is the last listed event's position, base64url-encoded so it
// survives any character in a provider's event id.
func encodeEventCursor(c models.EventCursor) string {
	raw := c.ReceivedAt.UTC().Format(time.RFC3339Nano) + "\n" + c.Provider + "\n" + c.EventID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeEventCursor(s string) (models.EventCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return models.EventCursor{}, err
	}
	parts := strings.SplitN(string(raw), "\n", 3)
	if len(parts) != 3 {
		return models.EventCursor{}, errors.New("cursor: want three parts")
	}
	at, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return models.EventCursor{}, err
	}
	return models.EventCursor{ReceivedAt: at, Provider: parts[1], EventID: parts[2]}, nil
}
