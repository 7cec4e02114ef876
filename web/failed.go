package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/views"
)

// maxBulk bounds one bulk retry; a bigger group is retried in rounds.
const maxBulk = 1000

// failedShown is how many of the largest groups the failed page lists.
const failedShown = 100

// listFailed reads the groups as the refresh-stats task last counted them:
// an exact count of every failed link is too slow for a page view. With
// ?aside=1 it lists the groups of the links put aside instead.
func (s *Server) listFailed(c echo.Context) error {
	aside := c.QueryParam("aside") == "1"
	all, err := models.FailedGroups(s.requestDB(c), false, 0)
	if err != nil {
		return err
	}
	asideAll, err := models.FailedGroups(s.requestDB(c), true, 0)
	if err != nil {
		return err
	}
	v := views.Failed{Aside: aside}
	for _, g := range all {
		v.FailedTotal += g.N
		v.CountedAt = g.CountedAt
	}
	for _, g := range asideAll {
		v.AsideTotal += g.N
		v.CountedAt = g.CountedAt
	}
	if aside {
		all = asideAll
	}
	v.NGroups = len(all)
	groups := all[:min(len(all), failedShown)]
	ids := make([]int64, 0, len(groups))
	for _, g := range groups {
		ids = append(ids, g.ExampleID)
	}
	examples, err := models.LinksByIDs(s.requestDB(c), ids)
	if err != nil {
		return err
	}
	byID := map[int64]models.Link{}
	for _, l := range examples {
		byID[l.ID] = l
	}
	for _, g := range groups {
		ex := byID[g.ExampleID]
		v.Groups = append(v.Groups, views.FailedGroupRow{Group: g.ErrorGroup, N: g.N, ExampleID: g.ExampleID,
			ExampleType: ex.LocalType, ExampleLocalID: ex.LocalID, ExampleError: ex.LastError, ExampleHTTP: ex.LastHTTPCode,
			ExampleReason: ex.PutAsideReason, ExampleBy: ex.PutAsideBy})
	}
	return s.render(c, views.FailedPage(s.page(c, "Failed", "/failed"), v))
}

func (s *Server) showFailedGroup(c echo.Context) error {
	return s.renderFailedGroup(c, http.StatusOK, c.QueryParam("g"), c.QueryParam("aside") == "1", "")
}

// failedGroupShown is how many of a group's failed links its page lists.
const failedGroupShown = 200

// renderFailedGroup shows one group's failed links (or those put aside) to
// pick from, with an error above them when an action on them could not go ahead.
func (s *Server) renderFailedGroup(c echo.Context, status int, group string, aside bool, problem string) error {
	ids, err := models.FailedIDs(s.requestDB(c), group, aside, failedGroupShown+1)
	if err != nil {
		return err
	}
	ids, more := pageOf(ids, failedGroupShown)
	v := views.FailedGroupView{Group: group, Aside: aside, More: more, Error: problem}
	links, err := models.LinksByIDs(s.requestDB(c), ids)
	if err != nil {
		return err
	}
	for _, l := range links {
		v.Rows = append(v.Rows, linkRow(l))
	}
	if !aside {
		// The other side's count, for the way there.
		if other, err := models.FailedIDs(s.requestDB(c), group, true, 1); err == nil {
			v.HasAside = len(other) > 0
		}
	}
	p := s.page(c, "Failed: one cause", "/failed")
	p.URL = views.FailedGroupURL(group, aside) // also when a form's refusal shows it
	return s.renderStatus(c, status, views.FailedGroupPage(p, v))
}

// askRetry shows how many links a bulk retry will touch — a whole group,
// or a selection — and carries exactly those ids to the confirmation.
func (s *Server) askRetry(c echo.Context) error {
	// With nothing to retry, back to the list the click came from, with
	// the reason above it.
	var ids []int64
	var what, fromGroup string
	var err error
	if group := c.FormValue("group"); group != "" {
		if ids, err = models.FailedIDs(s.requestDB(c), group, false, maxBulk); err != nil {
			return err
		}
		if len(ids) == 0 {
			return s.renderFailedGroup(c, http.StatusBadRequest, group, false, "No failed links are left in this group, so there is nothing to retry.")
		}
		what = "Every failed link of the group “" + group + "”."
		if len(ids) == maxBulk {
			what = fmt.Sprintf("The newest %s failed links of the group “%s”: a retry takes at most that many at once. Retry the group again for the rest.",
				views.Count(maxBulk), group)
		}
		fromGroup = group
	} else {
		if ids, err = formIDs(c); err != nil {
			return err
		}
		if len(ids) == 0 {
			if from := c.FormValue("from_group"); from != "" {
				return s.renderFailedGroup(c, http.StatusBadRequest, from, false, "Nothing was selected. Tick the links to retry, then press Retry selected again.")
			}
			return errBadRequest("Nothing to retry: select at least one failed link.")
		}
		what = "The links you selected."
		fromGroup = c.FormValue("from_group")
	}
	rows, err := models.LinksByIDs(s.requestDB(c), ids[:min(len(ids), 10)])
	if err != nil {
		return err
	}
	v := views.RetryConfirm{What: what, IDs: ids, Group: fromGroup}
	for _, l := range rows {
		v.Rows = append(v.Rows, linkRow(l))
	}
	if len(rows) > 0 {
		v.Permanent = views.FailureOf(rows[0].LastHTTPCode, rows[0].LastError, rows[0].RemoteDeletedAt != nil) == views.FailurePermanent
	}
	return s.render(c, views.RetryConfirmPage(s.page(c, "Retry failed links", "/failed"), v))
}

// retryConfirmed retries exactly the ids the confirmation showed.
func (s *Server) retryConfirmed(c echo.Context) error {
	ids, err := formIDs(c)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return errBadRequest("Nothing to retry.")
	}
	res, err := s.outbox.RetryMany(c.Request().Context(), ids, currentUser(c).Email)
	// The group the links came from, and which links: "4 links" alone
	// cannot be followed up.
	target := plural(len(ids), "link", "links")
	if g := c.FormValue("group"); g != "" {
		target = groupTarget(g)
	}
	did := fmt.Sprintf("%s; queued %d, already in progress %d, no longer there %d", idList(ids), res.Queued, res.Busy, res.Gone)
	if err != nil {
		s.audit(c, action.LinkBulkRetry, target, models.OutcomeFailure, did+"; then: "+err.Error())
		return err
	}
	s.audit(c, action.LinkBulkRetry, target, models.OutcomeSuccess, did)
	s.recountFailed(c, "a bulk retry")
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/failed?done=bulk-retry&queued=%d&busy=%d&gone=%d", res.Queued, res.Busy, res.Gone))
}

// recountFailed counts the failed links' groups again after an operator
// moved links into or out of failed, so that the failed page shows it at
// once instead of at the next scheduled count. If it fails, that count will.
// It is detached from the request: the links have already moved, and a
// client that leaves now must not leave the page counting them where they were.
func (s *Server) recountFailed(c echo.Context, after string) {
	if err := models.RefreshFailedGroups(s.detachedDB(c), s.clock.Now()); err != nil {
		s.log.Warn("recount failed groups after "+after, "error", err)
	}
}

func formIDs(c echo.Context) ([]int64, error) {
	form, err := c.FormParams()
	if err != nil {
		return nil, errBadRequest("Could not read the form.")
	}
	raw := form["id"]
	if len(raw) > maxBulk {
		return nil, errBadRequest(fmt.Sprintf("Retry at most %d links at once.", maxBulk))
	}
	seen := map[int64]bool{}
	var ids []int64
	for _, v := range raw {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			return nil, errBadRequest("A selected link id is not a number.")
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}
