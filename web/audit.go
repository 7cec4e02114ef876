package web

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/views"
)

const auditPageSize = 50

func (s *Server) listAudit(c echo.Context) error {
	vf := views.AuditFilter{Actor: c.QueryParam("actor"), Action: c.QueryParam("action"),
		Target: c.QueryParam("target"), Since: c.QueryParam("since"), Until: c.QueryParam("until"),
		HideSignIns: c.QueryParam("hide_signins") == "1"}
	f := models.AuditFilter{ActorPrefix: vf.Actor, Action: vf.Action, Target: vf.Target, Limit: auditPageSize + 1}
	if vf.HideSignIns {
		f.HideActions = []string{action.Login, action.Logout}
	}
	var err error
	if f.Since, err = parseDay(vf.Since, "from"); err != nil {
		return err
	}
	if f.Until, err = parseDay(vf.Until, "until"); err != nil {
		return err
	}
	if !f.Until.IsZero() {
		f.Until = f.Until.Add(24 * time.Hour) // "until" includes that whole day
	}
	if f.BeforeID, err = cursorParam(c, "before"); err != nil {
		return err
	}
	entries, err := models.ListAudit(s.requestDB(c), f)
	if err != nil {
		return err
	}
	entries, more := pageOf(entries, auditPageSize)
	v := views.AuditLog{Filter: vf, NewestURL: newestURL(c, "/audit", "before")}
	for _, e := range entries {
		v.Entries = append(v.Entries, views.AuditRow{At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target,
			TargetURL: targetURL(e.Target), Outcome: e.Outcome, IP: e.IP, Detail: s.redact.Text(e.Detail)})
	}
	if more {
		v.NextURL = pageURL(c, "/audit", "before", idCursor(entries[len(entries)-1].ID))
	}
	return s.render(c, views.AuditPage(s.page(c, "Audit log", "/audit"), v))
}

var linkTargetRe = regexp.MustCompile(`^link (\d+)$`)

// targetURL is the page of an audit entry's target, "" when it has none.
func targetURL(target string) string {
	if m := linkTargetRe.FindStringSubmatch(target); m != nil {
		return "/links/" + m[1]
	}
	if g, ok := strings.CutPrefix(target, "group "); ok && g != "" {
		return "/failed/group?g=" + url.QueryEscape(g)
	}
	return ""
}

// parseDay reads a YYYY-MM-DD form value as midnight UTC.
func parseDay(v, field string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return t, errBadRequest("The " + field + " date " + strconv.Quote(url.QueryEscape(v)) + " is not a date like 2026-11-29.")
	}
	return t, nil
}
