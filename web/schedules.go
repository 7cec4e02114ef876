package web

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/schedule"
	"github.com/syncdesk/syncdesk/views"
)

func (s *Server) listSchedules(c echo.Context) error {
	v := views.Schedules{Running: s.sched != nil}
	if s.sched != nil {
		for _, st := range s.sched.States() {
			v.Tasks = append(v.Tasks, views.TaskRow{Name: st.Name, Every: st.Every, LastStarted: st.LastStarted,
				LastDone: st.LastDone, LastError: st.LastError, Runs: st.Runs, NextRun: st.NextRun, Busy: st.Running,
				RunURL: "/schedules/" + url.PathEscape(st.Name) + "/run"})
		}
	}
	return s.render(c, views.SchedulesPage(s.page(c, "Schedules", "/schedules"), v))
}

// runSchedule starts a task now, outside its period, on an admin's click.
// A task already running is not started twice. Audited.
func (s *Server) runSchedule(c echo.Context) error {
	name := c.Param("name")
	st, ok := s.taskState(name)
	if !ok {
		return fmt.Errorf("scheduled task %q: %w", name, models.ErrNotFound)
	}
	if st.Running {
		s.audit(c, "schedule.run", name, models.OutcomeFailure, "already running")
		return c.Redirect(http.StatusSeeOther, "/schedules?done=task-busy")
	}
	if err := s.sched.RunNow(name); err != nil {
		// The task exists, so the scheduler itself refused: it is stopping or not started.
		s.audit(c, "schedule.run", name, models.OutcomeFailure, err.Error())
		s.log.Warn("run task now", "task", name, "err", err)
		return &statusError{http.StatusServiceUnavailable,
			"The scheduler did not take the task: it is stopping or has not started. Reload the page in a minute and try again."}
	}
	s.audit(c, "schedule.run", name, models.OutcomeSuccess, "")
	return c.Redirect(http.StatusSeeOther, "/schedules?done=task-started")
}

// taskState finds a task by name; false when there is no scheduler or no such task.
func (s *Server) taskState(name string) (schedule.State, bool) {
	if s.sched == nil {
		return schedule.State{}, false
	}
	for _, st := range s.sched.States() {
		if st.Name == name {
			return st, true
		}
	}
	return schedule.State{}, false
}
