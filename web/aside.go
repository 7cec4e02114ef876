package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/views"
)

// putAsideLink acknowledges one failed link with a reason: it leaves the
// Failed list and stays failed, until brought back or sent again.
func (s *Server) putAsideLink(c echo.Context) error {
	id, err := linkID(c)
	if err != nil {
		return err
	}
	reason := c.FormValue("reason")
	_, err = models.PutAsideOne(s.requestDB(c), id, currentUser(c).Email, reason, s.clock.Now())
	if err := s.auditEnd(c, action.LinkPutAside, "link "+c.Param("id"), err, strings.TrimSpace(reason)); err != nil {
		return err
	}
	s.recountFailed(c, "putting a link aside")
	return c.Redirect(http.StatusSeeOther, views.LinkURL(id)+"?done=link-put-aside")
}

// bringBackLink returns a put-aside link to the Failed list.
func (s *Server) bringBackLink(c echo.Context) error {
	id, err := linkID(c)
	if err != nil {
		return err
	}
	l, err := models.LinkByID(s.requestDB(c), id)
	if err != nil {
		return err
	}
	_, err = models.BringBackOne(s.requestDB(c), id)
	if err := s.auditEnd(c, action.LinkBringBack, "link "+c.Param("id"), err, "put aside by "+l.PutAsideBy+": "+l.PutAsideReason); err != nil {
		return err
	}
	s.recountFailed(c, "bringing a link back")
	return c.Redirect(http.StatusSeeOther, views.LinkURL(id)+"?done=link-brought-back")
}

// wholeGroup applies change to every link of a failure group, failed or
// (aside) put aside, maxBulk at a time, until none is left or a batch
// changes nothing (another person's action took the rest meanwhile). It
// returns how many changed and their ids; a group already empty is none.
func (s *Server) wholeGroup(c echo.Context, group string, aside bool, change func(ids []int64) (int64, error)) (int64, []int64, error) {
	var n int64
	var all []int64
	for {
		ids, err := models.FailedIDs(s.requestDB(c), group, aside, maxBulk)
		if err != nil || len(ids) == 0 {
			return n, all, err
		}
		changed, err := change(ids)
		if err != nil {
			return n, all, err
		}
		n, all = n+changed, append(all, ids...)
		if changed == 0 || len(ids) < maxBulk {
			return n, all, nil
		}
	}
}

// putAsideGroup puts aside every failed link of a group, with one reason.
func (s *Server) putAsideGroup(c echo.Context) error {
	group := c.FormValue("group")
	if group == "" {
		return errBadRequest("Name the group to put aside.")
	}
	reason := c.FormValue("reason")
	n, ids, err := s.wholeGroup(c, group, false, func(ids []int64) (int64, error) {
		return models.PutAside(s.requestDB(c), ids, currentUser(c).Email, reason, s.clock.Now())
	})
	if n > 0 { // what was done is audited, even if a later batch failed
		s.audit(c, action.GroupPutAside, groupTarget(group), models.OutcomeSuccess,
			fmt.Sprintf("put aside %d: %s; reason: %s", n, idList(ids), strings.TrimSpace(reason)))
		s.recountFailed(c, "putting a group aside")
	}
	var refused *models.InvalidError
	switch {
	case errors.As(err, &refused):
		s.audit(c, action.GroupPutAside, groupTarget(group), models.OutcomeDenied, refused.Reason)
		return s.renderFailedGroup(c, http.StatusBadRequest, group, false, refused.Reason)
	case err != nil:
		return err
	case len(ids) == 0:
		return s.renderFailedGroup(c, http.StatusBadRequest, group, false, "No failed links are left in this group, so there is nothing to put aside.")
	}
	return c.Redirect(http.StatusSeeOther, "/failed?done=group-put-aside")
}

// bringBackGroup returns every put-aside link of a group to Failed.
func (s *Server) bringBackGroup(c echo.Context) error {
	group := c.FormValue("group")
	if group == "" {
		return errBadRequest("Name the group to bring back.")
	}
	n, ids, err := s.wholeGroup(c, group, true, func(ids []int64) (int64, error) { return models.BringBack(s.requestDB(c), ids) })
	if n > 0 {
		s.audit(c, action.GroupBringBack, groupTarget(group), models.OutcomeSuccess, fmt.Sprintf("brought back %d: %s", n, idList(ids)))
		s.recountFailed(c, "bringing a group back")
	}
	switch {
	case err != nil:
		return err
	case len(ids) == 0:
		return s.renderFailedGroup(c, http.StatusBadRequest, group, true, "No links of this group are put aside any more, so there is nothing to bring back.")
	}
	return c.Redirect(http.StatusSeeOther, "/failed/group?g="+url.QueryEscape(group)+"&done=group-brought-back")
}

// groupTarget names a failure group as an audit entry's target.
func groupTarget(group string) string { return "group " + group }

// auditIDs is how many link ids a bulk action's audit entry lists; the rest
// are counted.
const auditIDs = 50

// idList names the links a bulk action touched for its audit entry: their
// ids, the first auditIDs of them, and how many more.
func idList(ids []int64) string {
	var b strings.Builder
	b.WriteString(plural(len(ids), "link", "links"))
	b.WriteString(", ids ")
	for i, id := range ids[:min(len(ids), auditIDs)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	if len(ids) > auditIDs {
		fmt.Fprintf(&b, " and %d more", len(ids)-auditIDs)
	}
	return b.String()
}
