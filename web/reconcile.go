package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/views"
)

const (
	runsPageSize          = 50
	discrepanciesPageSize = 100
)

func (s *Server) listRuns(c echo.Context) error {
	f := models.RunFilter{Service: c.QueryParam("service"), Limit: runsPageSize + 1}
	var err error
	if f.BeforeID, err = cursorParam(c, "before"); err != nil {
		return err
	}
	runs, err := models.ListRuns(s.requestDB(c), f)
	if err != nil {
		return err
	}
	runs, more := pageOf(runs, runsPageSize)
	v := views.Runs{Filter: f.Service, All: s.cfg.ServiceNames(), Services: s.reconcilable(),
		NewestURL: newestURL(c, "/reconcile", "before")}
	details, err := models.RunDetails(s.requestDB(c), runs)
	if err != nil {
		return err
	}
	for i := range details {
		v.Rows = append(v.Rows, s.runRow(&details[i]))
	}
	if more {
		v.NextURL = pageURL(c, "/reconcile", "before", idCursor(runs[len(runs)-1].ID))
	}
	return s.render(c, views.ReconcilePage(s.page(c, "Reconciliation", "/reconcile"), v))
}

func (s *Server) reconcilable() []string {
	if s.rec == nil {
		return nil
	}
	return s.rec.Reconcilable()
}

func (s *Server) runRow(d *models.RunDetail) views.RunRow {
	r := d.Run
	row := views.RunRow{ID: r.ID, Service: r.Service, Status: r.Status, DryRun: r.DryRun, TriggeredBy: r.TriggeredBy,
		StartedAt: r.StartedAt, Expected: r.Expected, Scanned: r.Scanned, Fixed: d.All.Fixed, Open: d.All.Open,
		Reported: d.All.Reported, Resolved: d.All.Resolved, Error: r.Error, SupersededBy: d.SupersededBy, AppliedBy: r.AppliedBy}
	if r.Listed != nil {
		row.Listed, row.HasListed = *r.Listed, true
	}
	if r.AppliedAt != nil {
		row.AppliedAt = *r.AppliedAt
	}
	end := s.clock.Now()
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	row.Duration = end.Sub(r.StartedAt)
	for _, k := range d.Kinds {
		if k.Total > 0 {
			row.Kinds = append(row.Kinds, kindCount(k))
		}
	}
	return row
}

func kindCount(k models.KindCount) views.KindCount {
	return views.KindCount{Kind: k.Kind, Open: k.Open, Fixed: k.Fixed, Reported: k.Reported, Resolved: k.Resolved, Total: k.Total}
}

// startRun starts a run in the background and shows its page; a run of the
// service already going answers 409 with a link to it.
func (s *Server) startRun(c echo.Context) error {
	service := c.FormValue("service")
	dry := c.FormValue("dry_run") != ""
	who := currentUser(c).Email
	id, err := s.rec.Start(c.Request().Context(), service, reconcile.RunOptions{DryRun: dry, TriggeredBy: who})
	target := "service " + service
	if errors.Is(err, models.ErrRunActive) {
		s.audit(c, action.ReconcileStart, target, models.OutcomeDenied, "a run is already going")
		v := views.RunBusy{Service: service}
		if last, err := models.LatestRun(s.requestDB(c), service); err == nil && last.Status == models.RunRunning {
			v.RunID = last.ID
		}
		return s.renderStatus(c, http.StatusConflict, views.RunBusyPage(s.page(c, "Already running", "/reconcile"), v))
	}
	if err != nil {
		return err
	}
	detail := fmt.Sprintf("run %d", id)
	if dry {
		detail += ", dry run"
	}
	s.audit(c, action.ReconcileStart, target, models.OutcomeSuccess, detail)
	return c.Redirect(http.StatusSeeOther, views.RunURL(id))
}

func runID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errBadRequest("A reconciliation run is named by a positive number.")
	}
	return id, nil
}

// discrepancyFilter reads the kind and status filters of a run's discrepancies.
func discrepancyFilter(c echo.Context, id int64) (models.DiscrepancyFilter, error) {
	f := models.DiscrepancyFilter{RunID: id, Kind: c.QueryParam("kind"), Status: c.QueryParam("status")}
	if f.Kind != "" && !oneOf(f.Kind, discrepancy.Kinds...) {
		return f, errBadRequest("There is no kind of discrepancy called " + strconv.Quote(f.Kind) + ".")
	}
	if f.Status != "" && !oneOf(f.Status, models.DiscrepancyOpen, models.DiscrepancyFixed, models.DiscrepancyReported, models.DiscrepancyResolved) {
		return f, errBadRequest("There is no discrepancy status called " + strconv.Quote(f.Status) + ".")
	}
	return f, nil
}

func oneOf(s string, options ...string) bool { return slices.Contains(options, s) }

func (s *Server) showRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	f, err := discrepancyFilter(c, id)
	if err != nil {
		return err
	}
	if f.AfterID, err = cursorParam(c, "after"); err != nil {
		return err
	}
	d, err := models.RunDetailByID(s.requestDB(c), id)
	if err != nil {
		return err
	}
	f.Limit = discrepanciesPageSize + 1
	found, err := models.ListDiscrepancies(s.requestDB(c), f)
	if err != nil {
		return err
	}
	found, more := pageOf(found, discrepanciesPageSize)
	v := views.RunView{Run: s.runRow(d), ConfirmedBy: d.Run.ConfirmedBy, All: kindCount(d.All), Progress: runProgress(d.Run),
		Filter: views.DiscrepancyFilter{Kind: f.Kind, Status: f.Status}, CSVURL: csvURL(id, f),
		FirstURL: newestURL(c, views.RunURL(id), "after")}
	v.Progress.Found = &v.All
	if d.Run.ConfirmedAt != nil {
		v.ConfirmedAt = *d.Run.ConfirmedAt
	}
	if err := s.runActions(c, d, &v); err != nil {
		return err
	}
	if v.StartedAfter, err = s.startedAfter(c, d); err != nil {
		return err
	}
	if d.Run.FinishedAt != nil {
		v.FinishedAt = *d.Run.FinishedAt
	}
	for _, k := range d.Kinds {
		v.Kinds = append(v.Kinds, kindCount(k))
	}
	if v.Rows, err = s.discrepancyRows(c, found); err != nil {
		return err
	}
	if more {
		v.NextURL = pageURL(c, views.RunURL(id), "after", idCursor(found[len(found)-1].ID))
	}
	title := fmt.Sprintf("Reconciliation of %s, run %d", d.Run.Service, id)
	return s.render(c, views.RunPage(s.page(c, title, "/reconcile"), v))
}

// startedAfter is the newer run of the service that keeps a run awaiting
// confirmation, and not superseded, from being confirmed: one still going
// or ended without comparing. 0 if none.
func (s *Server) startedAfter(c echo.Context, d *models.RunDetail) (int64, error) {
	if d.Run.Status != models.RunAwaiting || d.SupersededBy > 0 {
		return 0, nil
	}
	latest, err := models.LatestRun(s.requestDB(c), d.Run.Service)
	if err != nil || latest.ID == d.Run.ID {
		return 0, err
	}
	return latest.ID, nil
}

func csvURL(id int64, f models.DiscrepancyFilter) string {
	u := views.RunURL(id) + "/discrepancies.csv"
	q := url.Values{}
	if f.Kind != "" {
		q.Set("kind", f.Kind)
	}
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	if len(q) == 0 {
		return u
	}
	return u + "?" + q.Encode()
}

func runProgress(r models.ReconciliationRun) views.RunProgress {
	return views.RunProgress{ID: r.ID, Running: r.Status == models.RunRunning, Expected: r.Expected, Scanned: r.Scanned}
}

// discrepancyRows links a row's record only when it exists: a key found in
// the service (an unlinked or duplicated object) may name a record we do not
// have. Those records are looked up in one query for the page.
func (s *Server) discrepancyRows(c echo.Context, found []models.Discrepancy) ([]views.DiscrepancyRow, error) {
	var ask []models.RecordKey
	for _, x := range found {
		if remoteOnly(x) {
			ask = append(ask, models.RecordKey{LocalType: x.LocalType, LocalID: x.LocalID})
		}
	}
	have, err := models.ExistingRecords(s.requestDB(c), ask)
	if err != nil {
		return nil, err
	}
	rows := make([]views.DiscrepancyRow, 0, len(found))
	for _, x := range found {
		row := views.DiscrepancyRow{ID: x.ID, Kind: x.Kind, Status: x.Status, LocalType: x.LocalType, LocalID: x.LocalID,
			ExternalKey: x.ExternalKey, ExternalIDs: views.SplitIDs(x.ExternalIDs), Detail: x.Detail,
			HasRecord: x.LocalType != "" && x.LocalID != "", Differences: fieldDiffs(x.Differences),
			Resolution: x.Resolution, ResolutionNote: x.ResolutionNote, ResolvedBy: x.ResolvedBy}
		if x.ResolvedAt != nil {
			row.ResolvedAt = *x.ResolvedAt
		}
		if x.LinkID != nil {
			row.LinkID = *x.LinkID
		}
		if remoteOnly(x) {
			row.HasRecord = have[models.RecordKey{LocalType: x.LocalType, LocalID: x.LocalID}]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// remoteOnly is a discrepancy found from the provider's side, whose record
// may not exist here.
func remoteOnly(x models.Discrepancy) bool {
	return x.LocalType != "" && x.LocalID != "" &&
		(x.Kind == discrepancy.UnlinkedRemote || x.Kind == discrepancy.DuplicateRemote)
}

// runProgressFragment is the progress bar alone, which polls itself while
// the run goes. When the run has ended it asks htmx to reload the page,
// which then shows the report.
func (s *Server) runProgressFragment(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	d, err := models.RunDetailByID(s.requestDB(c), id)
	if err != nil {
		return err
	}
	p := runProgress(d.Run)
	found := kindCount(d.All)
	p.Found = &found
	if !p.Running {
		c.Response().Header().Set("HX-Refresh", "true")
	}
	return s.render(c, views.RunProgressBar(p))
}

// reconciling guards the routes that act through the reconciler: an
// instance built without one (a test's, or a command's) refuses them in words.
func (s *Server) reconciling(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.rec == nil {
			return errBadRequest("Reconciliation is not available on this instance.")
		}
		return next(c)
	}
}

// confirmRun applies the fixes beyond a run's safety valve. It runs them
// before answering: the page that follows shows them applied.
func (s *Server) confirmRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	// A closed tab must not interrupt the fixes half-way.
	ctx := context.WithoutCancel(c.Request().Context())
	_, err = s.rec.Confirm(ctx, id, currentUser(c).Email)
	if err := s.auditRunAction(c, action.ReconcileConfirm, id, err); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, views.RunURL(id))
}

// auditRunAction audits what an operator's action on run id came to, by
// its error: denied (another run is going, or the run cannot take it),
// failed, or done; a run that does not exist is only answered. It returns
// err.
func (s *Server) auditRunAction(c echo.Context, act string, id int64, err error) error {
	target := fmt.Sprintf("run %d", id)
	var inv *models.InvalidError
	switch {
	case errors.Is(err, models.ErrRunActive):
		s.audit(c, act, target, models.OutcomeDenied, "another run of the service is going")
	case errors.As(err, &inv):
		s.audit(c, act, target, models.OutcomeDenied, inv.Reason)
	case errors.Is(err, models.ErrNotFound):
	case err != nil:
		s.audit(c, act, target, models.OutcomeFailure, err.Error())
	default:
		s.audit(c, act, target, models.OutcomeSuccess, "")
	}
	return err
}

// cancelRun stops a run going on this instance; it ends interrupted.
func (s *Server) cancelRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	target := fmt.Sprintf("run %d", id)
	err = s.rec.Cancel(c.Request().Context(), id)
	if errors.Is(err, reconcile.ErrRunElsewhere) {
		s.audit(c, action.ReconcileCancel, target, models.OutcomeDenied, err.Error())
	}
	if err != nil {
		return err
	}
	s.audit(c, action.ReconcileCancel, target, models.OutcomeSuccess, "")
	return c.Redirect(http.StatusSeeOther, views.RunURL(id))
}

// exportDiscrepancies streams a run's discrepancies, with the page's
// filters, as a CSV download.
func (s *Server) exportDiscrepancies(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	f, err := discrepancyFilter(c, id)
	if err != nil {
		return err
	}
	r, err := models.RunByID(s.requestDB(c), id)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("reconcile-%s-run-%d.csv", safeFileName(r.Service), id)
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	c.Response().WriteHeader(http.StatusOK)
	if err := writeDiscrepanciesCSV(c.Request().Context(), s.requestDB(c), r.Service, f, c.Response()); err != nil {
		// The header is gone; all that is left is to log it.
		s.log.Error("export discrepancies", "run", id, "err", err)
	}
	return nil
}

// safeFileName keeps letters, digits, - and _ of a service name.
func safeFileName(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			out = append(out, r)
		default:
			out = append(out, '_')
		}
	}
	return string(out)
}
