package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/views"
)

// runActions fills in what an operator can do from a run's page: the types
// an object may be linked to, and whether a dry run's fixes can be applied.
func (s *Server) runActions(c echo.Context, d *models.RunDetail, v *views.RunView) error {
	v.Back = c.Request().URL.RequestURI()
	v.MaxFixes = s.cfg.Services[d.Run.Service].Reconcile.MaxFixes
	if v.MaxFixes <= 0 {
		v.MaxFixes = 100 // the default of sync/reconcile
	}
	if s.rec != nil {
		v.Types = s.rec.Types(d.Run.Service)
	}
	if !d.Run.DryRun || d.Run.Status != models.RunCompleted || d.Run.AppliedBy != "" || d.All.Open == 0 {
		return nil
	}
	latest, err := models.LatestRun(s.requestDB(c), d.Run.Service)
	if err != nil {
		return err
	}
	v.CanApply = latest.ID == d.Run.ID && s.rec != nil
	return nil
}

// fieldDiffs reads a discrepancy's stored differences; what cannot be read
// shows nothing rather than failing the page.
func fieldDiffs(stored string) []views.FieldDiff {
	if stored == "" {
		return nil
	}
	var ds []models.FieldDifference
	if json.Unmarshal([]byte(stored), &ds) != nil {
		return nil
	}
	out := make([]views.FieldDiff, len(ds))
	for i, d := range ds {
		out[i] = views.FieldDiff{Field: d.Field, Here: d.Here, There: d.There}
	}
	return out
}

// resolveActions are the form's words for what a person does.
var resolveActions = map[string]string{"link": models.ResolvedLinked, "keep": models.ResolvedKept, "dismiss": models.ResolvedDismissed}

// resolveDiscrepancy links, keeps or dismisses one discrepancy waiting for
// a person, audited, and goes back to the page it was asked from.
func (s *Server) resolveDiscrepancy(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	did, err := strconv.ParseInt(c.Param("did"), 10, 64)
	if err != nil || did <= 0 {
		return errBadRequest("A discrepancy is named by a positive number.")
	}
	act, ok := resolveActions[c.FormValue("action")]
	if !ok {
		return errBadRequest("Say what to do: link, keep or dismiss.")
	}
	d, err := models.DiscrepancyByID(s.requestDB(c), did)
	if err != nil {
		return err
	}
	if d.RunID != id {
		return fmt.Errorf("discrepancy %d of run %d: %w", did, id, models.ErrNotFound)
	}
	res := models.Resolution{DiscrepancyID: did, Action: act, LocalType: strings.TrimSpace(c.FormValue("local_type")),
		LocalID: strings.TrimSpace(c.FormValue("local_id")), ExternalID: c.FormValue("external_id"),
		Reason: c.FormValue("reason"), By: currentUser(c).Email}
	if utf8.RuneCountInString(res.Reason) > 500 {
		return errBadRequest("A reason is at most 500 characters.")
	}
	// Resolved before answering, and not stopped by a closed tab: the link
	// and its discrepancy change together or not at all.
	ctx := context.WithoutCancel(c.Request().Context())
	done, err := s.rec.Resolve(ctx, res)
	target := fmt.Sprintf("run %d, discrepancy %d", id, did)
	var inv *models.InvalidError
	switch {
	case errors.As(err, &inv):
		s.audit(c, action.ReconcileResolve, target, models.OutcomeDenied, inv.Reason)
		return err
	case err != nil:
		return err
	}
	if done.Link != nil {
		target = fmt.Sprintf("link %d", done.Link.ID)
	}
	s.audit(c, action.ReconcileResolve, target, models.OutcomeSuccess,
		fmt.Sprintf("%s discrepancy %d of run %d: %s", act, did, id, done.Discrepancy.ResolutionNote))
	return c.Redirect(http.StatusSeeOther, runPageAfter(c.FormValue("back"), views.RunURL(id), "disc-"+act))
}

// runPageAfter is the page an action returns to with its confirmation: back when
// it is this run's page (with its filters), else the run's page.
func runPageAfter(back, runURL, done string) string {
	path, query, _ := strings.Cut(back, "?")
	if path != runURL || strings.ContainsAny(query, "#\r\n") {
		back, query = runURL, ""
	}
	q := []string{}
	for _, kv := range strings.Split(query, "&") {
		if kv != "" && !strings.HasPrefix(kv, "done=") {
			q = append(q, kv)
		}
	}
	q = append(q, "done="+done)
	return runURL + "?" + strings.Join(q, "&")
}

// applyRun applies a dry run's open fixes through the safety valve, before
// answering: the page that follows shows them applied.
func (s *Server) applyRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	ctx := context.WithoutCancel(c.Request().Context())
	run, err := s.rec.ApplyDryRun(ctx, id, currentUser(c).Email)
	if err := s.auditRunAction(c, action.ReconcileApply, id, err); err != nil {
		return err
	}
	done := "dryrun-applied"
	if run.Status == models.RunAwaiting {
		done = "dryrun-applied-valve"
	}
	return c.Redirect(http.StatusSeeOther, views.RunURL(id)+"?done="+done)
}
