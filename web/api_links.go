package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
)

// linkJSON is a link as the API shows it.
type linkJSON struct {
	ID            int64     `json:"id"`
	LocalType     string    `json:"local_type"`
	LocalID       string    `json:"local_id"`
	Service       string    `json:"service"`
	ExternalKey   string    `json:"external_key"`
	ExternalID    string    `json:"external_id,omitempty"`
	Status        string    `json:"status"`
	Attempts      int       `json:"attempts"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	LastError     string    `json:"last_error,omitempty"`
	LastHTTPCode  int       `json:"last_http_code,omitempty"`
	UpdatedAt     time.Time `json:"updated_at"`
}

func toLinkJSON(l models.Link) linkJSON {
	return linkJSON{ID: l.ID, LocalType: l.LocalType, LocalID: l.LocalID, Service: l.ExternalService,
		ExternalKey: l.ExternalKey, ExternalID: l.ExternalID, Status: string(l.Status), Attempts: l.Attempts,
		NextAttemptAt: l.NextAttemptAt, LastError: l.LastError, LastHTTPCode: l.LastHTTPCode, UpdatedAt: l.UpdatedAt}
}

const apiPageSize = 100

// statusNames are the link statuses as the API and the pages spell them,
// in models.Statuses' order.
func statusNames() []string {
	names := make([]string, len(models.Statuses))
	for i, st := range models.Statuses {
		names[i] = string(st)
	}
	return names
}

// apiListLinks answers GET /api/v1/links?service=&status=&cursor=, newest first.
func (s *Server) apiListLinks(c echo.Context) error {
	f := models.LinkFilter{Service: c.QueryParam("service"), Status: models.Status(c.QueryParam("status")), Limit: apiPageSize}
	if f.Status != "" && !f.Status.Valid() {
		return errBadRequest("status must be one of " + strings.Join(statusNames(), ", "))
	}
	if cur := c.QueryParam("cursor"); cur != "" {
		// As the OpenAPI document's pattern says (^[1-9][0-9]*$): ParseInt
		// alone takes +5 and 007 too.
		id, err := strconv.ParseInt(cur, 10, 64)
		if err != nil || id <= 0 || strconv.FormatInt(id, 10) != cur {
			return errBadRequest("cursor must be the next_cursor of a previous page")
		}
		f.BeforeID = id
	}
	links, err := models.ListLinks(s.requestDB(c), f)
	if err != nil {
		return err
	}
	out := struct {
		Items      []linkJSON `json:"items"`
		NextCursor string     `json:"next_cursor,omitempty"`
	}{Items: make([]linkJSON, 0, len(links))}
	for _, l := range links {
		out.Items = append(out.Items, toLinkJSON(l))
	}
	if len(links) == apiPageSize {
		out.NextCursor = strconv.FormatInt(links[len(links)-1].ID, 10)
	}
	return c.JSON(http.StatusOK, out)
}
