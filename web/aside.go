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

// putAsideGroup puts aside every failed link of a group (up to maxBulk at
// once), with one reason.
func (s *Server) putAsideGroup(c echo.Context) error {
	group := c.FormValue("group")
	if group == "" {
		return errBadRequest("Name the group to put aside.")
	}
	reason := c.FormValue("reason")
	ids, err := models.FailedIDs(s.requestDB(c), group, false, maxBulk)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return s.renderFailedGroup(c, http.StatusBadRequest, group, false, "No failed links are left in this group, so there is nothing to put aside.")
	}
	n, err := models.PutAside(s.requestDB(c), ids, currentUser(c).Email, reason, s.clock.Now())
	var refused *models.InvalidError
	if errors.As(err, &refused) {
		s.audit(c, action.GroupPutAside, groupTarget(group), models.OutcomeDenied, refused.Reason)
		return s.renderFailedGroup(c, http.StatusBadRequest, group, false, refused.Reason)
	}
	if err != nil {
		return err
	}
	s.audit(c, action.GroupPutAside, groupTarget(group), models.OutcomeSuccess,
		fmt.Sprintf("put aside %d: %s; reason: %s", n, idList(ids), strings.TrimSpace(reason)))
	s.recountFailed(c, "putting a group aside")
	return c.Redirect(http.StatusSeeOther, "/failed?done=group-put-aside")
}

// bringBackGroup returns every put-aside link of a group to Failed.
func (s *Server) bringBackGroup(c echo.Context) error {
	group := c.FormValue("group")
	if group == "" {
		return errBadRequest("Name the group to bring back.")
	}
	ids, err := models.FailedIDs(s.requestDB(c), group, true, maxBulk)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return s.renderFailedGroup(c, http.StatusBadRequest, group, true, "No links of this group are put aside any more, so there is nothing to bring back.")
	}
	n, err := models.BringBack(s.requestDB(c), ids)
	if err != nil {
		return err
	}
	s.audit(c, action.GroupBringBack, groupTarget(group), models.OutcomeSuccess, fmt.Sprintf("brought back %d: %s", n, idList(ids)))
	s.recountFailed(c, "bringing a group back")
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
