package web

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/sync/outbox"
)

// recordJSON is a record with its links, as the API shows it.
type recordJSON struct {
	LocalType string     `json:"local_type"`
	LocalID   string     `json:"local_id"`
	Payload   rawJSON    `json:"payload"`
	Hash      string     `json:"content_hash"`
	UpdatedAt time.Time  `json:"updated_at"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
	Changed   *bool      `json:"changed,omitempty"`
	Links     []linkJSON `json:"links"`
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// apiPutRecord answers PUT /api/v1/records/{type}/{id}: an idempotent upsert.
// The same payload again changes nothing and queues nothing (200, changed
// false); a new one queues a push to every routed service.
func (s *Server) apiPutRecord(c echo.Context) error {
	typ, id := c.Param("type"), c.Param("id")
	if _, err := bodyMedia(c.Request(), "a record is sent as "+echo.MIMEApplicationJSON, echo.MIMEApplicationJSON); err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, models.MaxPayload+1))
	if err != nil {
		return errBadRequest("could not read the request body")
	}
	if len(body) > models.MaxPayload {
		return &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the payload is larger than %d bytes", models.MaxPayload)}
	}
	res, err := s.outbox.Upsert(c.Request().Context(), typ, id, body)
	if err != nil {
		return err
	}
	return s.answerRecordWrite(c, action.RecordUpsert, typ, id, res)
}

// answerRecordWrite answers a write of one record with the record as it
// now is and whether the write changed it, and audits a change as act.
func (s *Server) answerRecordWrite(c echo.Context, act, typ, id string, res outbox.Enqueued) error {
	rec, err := models.RecordByKey(s.requestDB(c), typ, id)
	if err != nil {
		return err
	}
	out := toRecordJSON(rec, res.Links)
	out.Changed = &res.Changed
	if res.Changed {
		s.audit(c, act, typ+"/"+id, models.OutcomeSuccess, "")
	}
	return c.JSON(http.StatusOK, out)
}

// apiDeleteRecord answers DELETE /api/v1/records/{type}/{id}: the record is
// deleted, and the delete of its object queued to every service it is
// linked to. A record deleted already changes nothing (200, changed false);
// a write of it afterwards brings it back.
func (s *Server) apiDeleteRecord(c echo.Context) error {
	typ, id := c.Param("type"), c.Param("id")
	res, err := s.outbox.Delete(c.Request().Context(), typ, id)
	if err != nil {
		return err
	}
	return s.answerRecordWrite(c, action.RecordDelete, typ, id, res)
}

// apiGetRecord answers GET /api/v1/records/{type}/{id}: the record and its links.
func (s *Server) apiGetRecord(c echo.Context) error {
	rec, err := models.RecordByKey(s.requestDB(c), c.Param("type"), c.Param("id"))
	if err != nil {
		return err
	}
	links, err := models.RecordLinks(s.requestDB(c), rec.LocalType, rec.LocalID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toRecordJSON(rec, links))
}

// apiSyncLink answers POST /api/v1/links/{id}/sync: "Sync now", debounced.
// 202 when queued; 409 with who and since when while a sync is in progress.
func (s *Server) apiSyncLink(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return errBadRequest("the link id must be a positive number")
	}
	who, _ := actor(c)
	link, busy, err := s.syncNow(c, id, who)
	if err != nil {
		return err
	}
	if busy != nil {
		return c.JSON(http.StatusConflict, map[string]any{"status": "already_in_progress", "error": busy.Error(),
			"since": busy.Row.StartedAt, "by": busy.Row.StartedBy})
	}
	link.Status = models.StatusNew // as queued, not as it was before the request
	return c.JSON(http.StatusAccepted, map[string]any{"status": "queued", "link": toLinkJSON(*link)})
}

func toRecordJSON(r *models.Record, links []models.Link) recordJSON {
	out := recordJSON{LocalType: r.LocalType, LocalID: r.LocalID, Payload: rawJSON(r.Payload), Hash: r.ContentHash,
		UpdatedAt: r.UpdatedAt, DeletedAt: r.DeletedAt, Links: make([]linkJSON, 0, len(links))}
	for _, l := range links {
		out.Links = append(out.Links, toLinkJSON(l))
	}
	return out
}
