package web

import (
	"errors"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/views"
)

// showOverview reads maintained aggregates, never a count over every link:
// it stays fast at millions of rows.
func (s *Server) showOverview(c echo.Context) error {
	now := s.clock.Now()
	v := views.Overview{Statuses: statusNames()}
	counts, err := models.LinkCounts(s.requestDB(c))
	if err != nil {
		return err
	}
	s.fillCounts(&v, counts)
	hours, err := models.AttemptHours(s.requestDB(c), now.UTC().Truncate(time.Hour).Add(-23*time.Hour))
	if err != nil {
		return err
	}
	v.Hours = hourBars(hours)
	failures, err := models.NewestFailures(s.requestDB(c), 8)
	if err != nil {
		return err
	}
	for _, l := range failures {
		v.Failures = append(v.Failures, linkRow(l))
	}
	rows, n, err := models.InProgressRows(s.requestDB(c), now, 8)
	if err != nil {
		return err
	}
	v.InProgressTotal, v.InProgressWaiting, v.InProgressHeld = n.Live, n.Waiting, n.Held
	aside, err := models.FailedGroups(s.requestDB(c), true, 0)
	if err != nil {
		return err
	}
	for _, g := range aside {
		v.AsideTotal += g.N
	}
	for _, r := range rows {
		v.InProgress = append(v.InProgress, views.InProgressRow{Service: r.ExternalService, LocalType: r.LocalType,
			LocalID: r.LocalID, By: r.StartedBy, Since: r.StartedAt, Waiting: r.Holder == models.RequestHolder})
	}
	if v.Reconciliation, err = s.reconcileSummary(c); err != nil {
		return err
	}
	return s.render(c, views.OverviewPage(s.page(c, "Overview", "/"), v))
}

// reconcileSummary is each reconcilable service's newest run.
func (s *Server) reconcileSummary(c echo.Context) ([]views.ReconcileSummary, error) {
	db := s.requestDB(c)
	services := s.reconcilable()
	var latest []models.ReconciliationRun
	for _, svc := range services {
		run, err := models.LatestRun(db, svc)
		switch {
		case errors.Is(err, models.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			latest = append(latest, *run)
		}
	}
	details, err := models.RunDetails(db, latest) // their counts in one query
	if err != nil {
		return nil, err
	}
	last := map[string]*views.RunRow{}
	for i := range details {
		row := s.runRow(&details[i])
		last[row.Service] = &row
	}
	out := make([]views.ReconcileSummary, 0, len(services))
	for _, svc := range services {
		out = append(out, views.ReconcileSummary{Service: svc, Last: last[svc]})
	}
	return out, nil
}

func (s *Server) fillCounts(v *views.Overview, counts []models.StatLinkCount) {
	byService := map[string]int{}
	for _, sc := range counts {
		i, ok := byService[sc.Service]
		if !ok {
			i = len(v.Services)
			byService[sc.Service] = i
			v.Services = append(v.Services, views.ServiceCounts{Service: sc.Service, Counts: map[string]int64{}})
		}
		v.Services[i].Counts[sc.Status] += sc.N
		v.Services[i].Total += sc.N
		v.CountedAt = sc.CountedAt
	}
}

func hourBars(rows []models.StatAttemptHour) []views.HourBar {
	var out []views.HourBar
	idx := map[int64]int{}
	for _, r := range rows {
		k := r.Hour.UTC().Unix()
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, views.HourBar{Start: r.Hour})
		}
		switch models.Outcome(r.Outcome) {
		case models.OutcomeOK:
			out[i].OK += r.N
		case models.OutcomeTemporary:
			out[i].Temporary += r.N
		case models.OutcomePermanent:
			out[i].Permanent += r.N
		case models.OutcomeAmbiguous:
			out[i].Ambiguous += r.N
		}
	}
	return out
}
