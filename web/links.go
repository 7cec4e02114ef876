package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/views"
)

const linksPageSize = 50

func (s *Server) listLinks(c echo.Context) error {
	f := views.LinkFilter{Service: c.QueryParam("service"), Status: c.QueryParam("status"), Type: c.QueryParam("type"),
		Class: c.QueryParam("class"), Q: strings.TrimSpace(c.QueryParam("q"))}
	q := models.LinkQuery{Service: f.Service, LocalType: f.Type, Status: models.Status(f.Status), Class: f.Class, Search: f.Q, Limit: linksPageSize + 1}
	// "order 10004" with the type filter on another type is left as typed,
	// and so matches nothing.
	types := s.routedTypes()
	if typ, id := splitSearch(f.Q, types); typ != "" && (q.LocalType == "" || q.LocalType == typ) {
		q.LocalType, q.Search = typ, id
	}
	if q.Status != "" && !q.Status.Valid() {
		return errBadRequest("There is no status called " + strconv.Quote(f.Status) + ".")
	}
	if q.Class != "" && !oneOf(q.Class, models.ClassTemporary, models.ClassPermanent, models.ClassAmbiguous) {
		return errBadRequest("There is no error kind called " + strconv.Quote(f.Class) + "; clear the filters and pick one from the list.")
	}
	var err error
	if q.BeforeID, err = cursorParam(c, "before"); err != nil {
		return err
	}
	links, err := models.SearchLinks(s.requestDB(c), q)
	if err != nil {
		return err
	}
	links, more := pageOf(links, linksPageSize)
	v := views.Links{Filter: f, Services: s.cfg.ServiceNames(), Types: types, Filtered: f != views.LinkFilter{},
		NewestURL: newestURL(c, "/links", "before")}
	v.Statuses = statusNames()
	if v.Rows, err = s.linkRows(c, links); err != nil {
		return err
	}
	if more {
		v.NextURL = pageURL(c, "/links", "before", idCursor(links[len(links)-1].ID))
	}
	return s.render(c, views.LinksPage(s.page(c, "Links", "/links"), v))
}

// splitSearch reads a search typed as the table shows a record ("order
// 10004") into its type and id. A first word that is none of the routed
// types leaves the search as typed, and so does a single word.
func splitSearch(q string, types []string) (typ, id string) {
	first, rest, ok := strings.Cut(q, " ")
	if !ok {
		return "", ""
	}
	rest = strings.TrimSpace(rest)
	for _, t := range types {
		if strings.EqualFold(t, first) && rest != "" {
			return t, rest
		}
	}
	return "", ""
}

// routedTypes are the local types some service takes, sorted.
func (s *Server) routedTypes() []string {
	seen := map[string]bool{}
	for _, svc := range s.cfg.Services {
		for typ := range svc.Objects {
			seen[typ] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func linkRow(l models.Link) views.LinkRow {
	r := views.LinkRow{ID: l.ID, LocalType: l.LocalType, LocalID: l.LocalID, Service: l.ExternalService, Status: string(l.Status),
		ExternalID: l.ExternalID, ExternalKey: l.ExternalKey, Attempts: l.Attempts, LastError: l.LastError, LastHTTP: l.LastHTTPCode,
		NeedsLookup: l.NeedsLookup, RemoteDeleted: l.RemoteDeletedAt != nil, NextAttemptAt: l.NextAttemptAt, UpdatedAt: l.UpdatedAt}
	if l.PutAsideAt != nil {
		r.PutAsideBy, r.PutAsideAt, r.PutAsideReason = l.PutAsideBy, *l.PutAsideAt, l.PutAsideReason
	}
	if l.FailedAt != nil {
		r.FailedAt = *l.FailedAt
	}
	return r
}

// linkRows are links as a list shows them, each with who asked for the sync
// under way, read in one query.
func (s *Server) linkRows(c echo.Context, links []models.Link) ([]views.LinkRow, error) {
	held, err := models.InProgressOfLinks(s.requestDB(c), links, s.clock.Now())
	if err != nil {
		return nil, err
	}
	rows := make([]views.LinkRow, len(links))
	for i, l := range links {
		rows[i] = linkRow(l)
		if ip, ok := held[l.ID]; ok {
			rows[i].InProgressBy, rows[i].InProgressAt = ip.StartedBy, ip.StartedAt
		}
	}
	return rows, nil
}

// linkRowOf is one link as its page and its status cell show it.
func (s *Server) linkRowOf(c echo.Context, l *models.Link) (views.LinkRow, error) {
	rows, err := s.linkRows(c, []models.Link{*l})
	if err != nil {
		return views.LinkRow{}, err
	}
	return rows[0], nil
}

func linkID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errBadRequest("A link is named by a positive number.")
	}
	return id, nil
}

func (s *Server) showLink(c echo.Context) error {
	id, err := linkID(c)
	if err != nil {
		return err
	}
	l, err := models.LinkByID(s.requestDB(c), id)
	if err != nil {
		return err
	}
	row, err := s.linkRowOf(c, l)
	if err != nil {
		return err
	}
	v := views.LinkDetail{Link: row, IdempotencyKey: l.IdempotencyKey, CreatedAt: l.CreatedAt}
	attempts, err := models.LinkAttempts(s.requestDB(c), id)
	if err != nil {
		return err
	}
	rec, err := models.RecordByKey(s.requestDB(c), l.LocalType, l.LocalID)
	switch {
	case errors.Is(err, models.ErrNotFound):
		rec = nil
	case err != nil:
		return err
	}
	causes, err := s.roundCauses(c, l, rec, attempts)
	if err != nil {
		return err
	}
	v.Attempts = attemptRows(attempts, causes)
	svc := s.cfg.Services[l.ExternalService]
	v.CanLookup = svc.Objects[l.LocalType].StrongLookup()
	g := svc.Guarantee(l.LocalType)
	v.Guard, v.Guarded = g.Words, g.Safe
	v.Unknown = l.ExternalID == "" && l.Status != models.StatusSuccess &&
		len(v.Attempts) > 0 && v.Attempts[0].Outcome == string(models.OutcomeAmbiguous)
	if rec != nil {
		v.Payload = s.prettyRedacted(rec.Payload)
		v.RecordDeletedAt = rec.DeletedAt
	}
	title := l.LocalType + " " + l.LocalID + " in " + l.ExternalService
	return s.render(c, views.LinkPage(s.page(c, title, "/links"), v))
}

// attemptRows numbers a link's attempts across the whole history shown
// (oldest 1, newest highest) and groups them in rounds, newest first. The
// log numbers attempts within a round (a success, a retry or a new payload
// starts again at 1), so a round begins where a number is not one more than
// the previous attempt's. causes says why each round after the first began,
// by the index of its first attempt (roundCauses).
func attemptRows(attempts []models.Attempt, causes map[int]string) []views.AttemptRow {
	rows := make([]views.AttemptRow, len(attempts))
	round, began, why := 0, time.Time{}, ""
	for i, a := range attempts { // oldest first, as the log holds them
		if i == 0 || a.Number != attempts[i-1].Number+1 {
			round++
			began, why = a.CreatedAt, causes[i]
		}
		rows[len(rows)-1-i] = views.AttemptRow{Number: i + 1, Round: round, RoundBegan: began, RoundWhy: why, Operation: a.Operation,
			Outcome: string(a.Outcome), HTTPCode: a.HTTPCode, DurationMS: a.DurationMS, Error: a.Error, Request: a.RequestExcerpt,
			Response: a.ResponseExcerpt, Worker: a.Worker, IdempotencyKey: a.IdempotencyKey, ExternalID: a.ExternalID, At: a.CreatedAt}
	}
	return rows
}

// prettyRedacted indents a JSON payload after masking what must not show.
func (s *Server) prettyRedacted(payload string) string {
	red := s.redact.JSON([]byte(payload))
	var buf bytes.Buffer
	if json.Indent(&buf, red, "", "  ") != nil {
		return string(red)
	}
	return buf.String()
}

// linkStatus is the status cell alone, which polls itself while a sync is
// under way.
func (s *Server) linkStatus(c echo.Context) error {
	id, err := linkID(c)
	if err != nil {
		return err
	}
	l, err := models.LinkByID(s.requestDB(c), id)
	if err != nil {
		return err
	}
	row, err := s.linkRowOf(c, l)
	if err != nil {
		return err
	}
	p := s.page(c, "", "")
	onPage := onLinkPage(c, id)
	// A list follows a sync until it ends; the link's own page also waits
	// through the link's retries (views.LinkPageStatusCell).
	poll := views.StateOf(p, row, false).Poll || onPage && views.FollowsRetry(p, row)
	sent := l.Status != models.StatusNew && l.Status != models.StatusProcessing && c.QueryParam("v") != views.LinkVersion(row)
	if onPage && (!poll || sent) {
		// The sync has ended, or a send has happened since the page was
		// drawn (a retry that failed again). On the link's own page the
		// last error, the remote id, the attempts and the buttons changed
		// too: reload it whole, so that no "Synced" sits beside an old "gave up".
		c.Response().Header().Set("HX-Refresh", "true")
	}
	return s.render(c, views.LinkStatusAnswer(p, row, false, false, onPage))
}

// onLinkPage reports whether an htmx request comes from link id's own page
// (htmx names the page in HX-Current-URL), rather than from a list.
func onLinkPage(c echo.Context, id int64) bool {
	u, err := url.Parse(c.Request().Header.Get("HX-Current-URL"))
	return err == nil && u.Path == views.LinkURL(id)
}

// syncLink is Sync now / Retry. A second click — from this page, another
// tab or another operator — changes nothing and says who asked, and when.
func (s *Server) syncLink(c echo.Context) error {
	id, err := linkID(c)
	if err != nil {
		return err
	}
	_, busy, err := s.syncNow(c, id, currentUser(c).Email)
	if err != nil {
		return err
	}
	if c.Request().Header.Get("HX-Request") != "true" {
		return c.Redirect(http.StatusSeeOther, views.LinkURL(id))
	}
	l, err := models.LinkByID(s.requestDB(c), id)
	if err != nil {
		return err
	}
	row, err := s.linkRowOf(c, l)
	if err != nil {
		return err
	}
	return s.render(c, views.LinkStatusAnswer(s.page(c, "", ""), row, busy != nil, true, onLinkPage(c, id)))
}

// syncNow queues link id now on who's behalf, for the page and the API
// alike, and audits it: a retry (of a failed or retrying link) apart from a
// Sync now, a click while a sync is in progress as denied. busy says who
// started the one in progress; it is not an error.
func (s *Server) syncNow(c echo.Context, id int64, who string) (*models.Link, *models.InProgressError, error) {
	before, err := models.LinkByID(s.requestDB(c), id)
	if err != nil {
		return nil, nil, err
	}
	act := action.LinkSync
	if before.Status == models.StatusFailed || before.Status == models.StatusRetry {
		act = action.LinkRetry
	}
	target := fmt.Sprintf("link %d", id)
	link, err := s.outbox.SyncNow(c.Request().Context(), id, who)
	var busy *models.InProgressError
	switch {
	case errors.As(err, &busy):
		s.audit(c, act, target, models.OutcomeDenied, busy.Error())
		return nil, busy, nil
	case err != nil:
		return nil, nil, err
	}
	detail := ""
	if before.PutAsideAt != nil {
		detail = "it was put aside by " + before.PutAsideBy + ": it is back in the queue"
	}
	s.audit(c, act, target, models.OutcomeSuccess, detail)
	if before.Status == models.StatusFailed {
		s.recountFailed(c, "a retry")
	}
	return link, nil, nil
}

func (s *Server) failLink(c echo.Context) error {
	id, err := linkID(c)
	if err != nil {
		return err
	}
	reason := c.FormValue("reason")
	if utf8.RuneCountInString(reason) > 500 {
		return errBadRequest("Keep the reason under 500 characters.")
	}
	// The button shows only on links waiting to be sent; MarkFailed refuses
	// any other, in words, for a stale page or a forged post.
	_, err = s.outbox.MarkFailed(c.Request().Context(), id, currentUser(c).Email, reason)
	if err := s.auditEnd(c, action.LinkMarkFailed, "link "+c.Param("id"), err, reason); err != nil {
		return err
	}
	s.recountFailed(c, "marking a link failed")
	return c.Redirect(http.StatusSeeOther, views.LinkURL(id)+"?done=link-failed")
}

func (s *Server) recreateLink(c echo.Context) error {
	id, err := linkID(c)
	if err != nil {
		return err
	}
	if _, err := s.outbox.Recreate(c.Request().Context(), id); err != nil {
		return err
	}
	s.audit(c, action.LinkRecreate, "link "+c.Param("id"), models.OutcomeSuccess, "")
	s.recountFailed(c, "re-creating a link") // it left failed
	return c.Redirect(http.StatusSeeOther, views.LinkURL(id)+"?done=link-recreated")
}
