package web

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/schedule"
	"github.com/syncdesk/syncdesk/views"
)

// reconcileTask is the scheduled task that starts the reconciliations that are due.
const reconcileTask = "reconcile"

func (s *Server) listSchedules(c echo.Context) error {
	v := views.Schedules{Running: s.sched != nil}
	if s.sched != nil {
		states, err := s.sched.States(c.Request().Context())
		if err != nil {
			return fmt.Errorf("read the scheduled tasks: %w", err)
		}
		v.Instance = s.sched.Instance()
		for _, st := range states {
			v.Tasks = append(v.Tasks, s.taskRow(st))
		}
	}
	slices.SortStableFunc(v.Tasks, func(a, b views.TaskRow) int {
		return cmp.Or(cmp.Compare(views.TaskRank(a.Name), views.TaskRank(b.Name)), strings.Compare(a.Name, b.Name))
	})
	return s.render(c, views.SchedulesPage(s.page(c, "Schedules", "/schedules"), v))
}

// taskRow is one task as the page shows it.
func (s *Server) taskRow(st schedule.State) views.TaskRow {
	row := views.TaskRow{Name: st.Name, Every: st.Every, EveryInstance: st.EveryInstance,
		LastStarted: st.LastStarted, LastDone: st.LastDone, LastError: st.LastError, LastInstance: st.LastInstance,
		Runs: st.Runs, NextRun: st.NextRun, Busy: st.Running, RunningOn: st.RunningOn, RunningSince: st.RunningSince,
		RunURL: "/schedules/" + url.PathEscape(st.Name) + "/run"}
	if st.Name == reconcileTask {
		row.Reconciles = s.reconcilePeriods()
	}
	return row
}

// reconcilePeriods says how often each reconcilable service is reconciled.
// The reconcile task only looks for services that are due; this is the
// period that makes one due.
func (s *Server) reconcilePeriods() []views.ServicePeriod {
	var out []views.ServicePeriod
	for _, name := range s.reconcilable() {
		rc := s.cfg.Services[name].Reconcile
		out = append(out, views.ServicePeriod{Service: name, Every: rc.Period(), Manual: rc.Manual})
	}
	return out
}

// runSchedule starts a task now, outside its period, on an admin's click:
// once, on this instance, and not while any instance is running it. Audited.
func (s *Server) runSchedule(c echo.Context) error {
	name := c.Param("name")
	if s.sched == nil || !s.sched.Has(name) {
		return fmt.Errorf("scheduled task %q: %w", name, models.ErrNotFound)
	}
	if name == reconcileTask && len(s.reconcilable()) > 0 {
		return s.reconcileEveryService(c)
	}
	err := s.sched.RunNow(c.Request().Context(), name)
	switch {
	case errors.Is(err, schedule.ErrRunning):
		s.audit(c, action.ScheduleRun, name, models.OutcomeFailure, "already running")
		return c.Redirect(http.StatusSeeOther, "/schedules?done=task-busy")
	case errors.Is(err, schedule.ErrStopped):
		s.audit(c, action.ScheduleRun, name, models.OutcomeFailure, err.Error())
		return err // problemFor: 503, and logged there
	case err != nil:
		s.audit(c, action.ScheduleRun, name, models.OutcomeFailure, err.Error())
		return fmt.Errorf("run task %s now: %w", name, err)
	}
	s.audit(c, action.ScheduleRun, name, models.OutcomeSuccess, "")
	return c.Redirect(http.StatusSeeOther, "/schedules?done=task-started")
}

// reconcileEveryService is Run now on the reconcile task. The task itself
// only starts the runs that are due, so a click on it would mostly start
// nothing: the click starts a run of every service instead, as the
// reconciliation page's Start button does, and shows them.
func (s *Server) reconcileEveryService(c echo.Context) error {
	started, busy, err := s.rec.StartEvery(c.Request().Context(), currentUser(c).Email)
	did := whatStarted(started, busy)
	if err != nil {
		s.audit(c, action.ScheduleRun, reconcileTask, models.OutcomeFailure, strings.Join(append([]string{err.Error()}, did...), "; "))
		return err
	}
	done := "runs-started"
	switch {
	case len(started) == 0:
		done = "runs-all-busy"
	case len(busy) > 0:
		done = "runs-started-some-busy"
	}
	s.audit(c, action.ScheduleRun, reconcileTask, models.OutcomeSuccess, strings.Join(did, "; "))
	return c.Redirect(http.StatusSeeOther, "/reconcile?done="+done)
}

// whatStarted says, for the audit log, which runs a click started and which
// services were already being reconciled.
func whatStarted(started []reconcile.Started, busy []string) []string {
	var did []string
	if len(started) > 0 {
		names := make([]string, len(started))
		for i, st := range started {
			names[i] = fmt.Sprintf("%s (run %d)", st.Service, st.RunID)
		}
		did = append(did, "started "+strings.Join(names, ", "))
	}
	if len(busy) > 0 {
		did = append(did, "already running: "+strings.Join(busy, ", "))
	}
	return did
}
