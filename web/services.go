package web

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/views"
)

// healthWindow is how far back the Services page counts calls.
const healthWindow = time.Hour

func (s *Server) listServices(c echo.Context) error {
	return s.renderServices(c, http.StatusOK, "")
}

// renderServices shows every configured service with its pause state, the
// last hour's calls by outcome and its links by status.
func (s *Server) renderServices(c echo.Context, status int, problem string) error {
	p := s.page(c, "Services", "/services")
	p.URL = "/services" // also when a form's refusal shows it
	outcomes, err := models.CountOutcomesSince(s.requestDB(c), s.clock.Now().Add(-healthWindow))
	if err != nil {
		return err
	}
	// The calls and the links by status as refresh-stats last counted them:
	// counting here would cost half a second at a million links.
	counts, err := models.LinkCounts(s.requestDB(c))
	if err != nil {
		return err
	}
	rows, err := models.RateLimits(s.requestDB(c))
	if err != nil {
		return err
	}
	paces := make(map[string]models.RateLimit, len(rows))
	for _, r := range rows {
		paces[r.Service] = r
	}
	deliveries, err := s.webhookHealth(c, s.webhookServices())
	if err != nil {
		return err
	}
	paused := map[string]views.PausedService{}
	for _, ps := range p.Paused {
		paused[ps.Name] = ps
	}
	v := views.Services{Error: problem}
	for _, n := range counts {
		v.CountedAt = n.CountedAt
	}
	for _, name := range s.cfg.ServiceNames() {
		card := describeService(name, s.cfg.Services[name])
		if ps, ok := paused[name]; ok {
			card.Pause = &ps
			delete(paused, name)
		}
		if r, ok := paces[name]; ok {
			fillPace(&card, s.cfg.Services[name], r, s.clock.Now())
		}
		if d, ok := deliveries[name]; ok {
			card.Deliveries = &d
		}
		fillHealth(&card, outcomes)
		fillLinks(&card, counts)
		v.Services = append(v.Services, card)
	}
	if v.Sources, err = s.sourceCards(c); err != nil {
		return err
	}
	for _, ps := range p.Paused {
		if _, orphan := paused[ps.Name]; orphan {
			v.Orphans = append(v.Orphans, ps)
		}
	}
	return s.renderStatus(c, status, views.ServicesPage(p, v))
}

// fillPace says what the provider's headers taught the rate limiter, and
// whether every instance is holding off now.
func fillPace(card *views.ServiceCard, svc config.Service, r models.RateLimit, now time.Time) {
	if limit, window := r.Learned(); limit > 0 {
		card.PaceLearned = fmt.Sprintf("%s allows %d calls per %s (its headers say); syncdesk keeps to %s a second",
			cmp.Or(svc.Provider, card.Name), limit, shortDuration(window), strconv.FormatFloat(r.Rate, 'f', 1, 64))
	}
	if until, why := r.Blocked(); until.After(now) {
		card.PaceHeld = fmt.Sprintf("Holding off until %s UTC, all instances: %s", until.Format("15:04:05"), why)
	}
}

// fillHealth puts the service's recent calls on its card, every outcome
// shown even at zero so that the numbers line up from card to card.
func fillHealth(card *views.ServiceCard, counts []models.OutcomeCount) {
	n := map[models.Outcome]int64{}
	for _, oc := range counts {
		if oc.Service == card.Name {
			n[oc.Outcome] += oc.N
			card.Calls += oc.N
		}
	}
	for _, o := range []models.Outcome{models.OutcomeOK, models.OutcomeTemporary, models.OutcomePermanent, models.OutcomeAmbiguous} {
		card.Health = append(card.Health, views.OutcomeStat{Outcome: string(o), N: n[o]})
	}
}

// fillLinks puts the service's links by status on its card, each a link to
// the links list filtered on that service and status.
func fillLinks(card *views.ServiceCard, counts []models.StatLinkCount) {
	n := map[models.Status]int64{}
	for _, sc := range counts {
		if sc.Service == card.Name {
			n[models.Status(sc.Status)] += sc.N
			card.LinksTotal += sc.N
		}
	}
	q := url.Values{"service": {card.Name}}
	card.LinksURL = "/links?" + q.Encode()
	for _, st := range models.Statuses {
		if n[st] == 0 {
			continue
		}
		q.Set("status", string(st))
		card.Links = append(card.Links, views.StatusLink{Status: string(st), N: n[st], URL: "/links?" + q.Encode()})
	}
}

func (s *Server) pauseService(c echo.Context) error {
	if s.pauser == nil {
		return errBadRequest("pausing is not available on this server")
	}
	name := c.Param("name")
	who, _ := actor(c)
	held, created, err := s.pauser.Pause(c.Request().Context(), name, who, c.FormValue("reason"))
	var inv *models.InvalidError
	switch {
	case errors.As(err, &inv):
		return s.renderServices(c, http.StatusBadRequest, inv.Reason)
	case err != nil:
		return err
	}
	if !created {
		s.audit(c, action.ServicePause, name, models.OutcomeSuccess, "already paused by "+held.PausedBy)
		return c.Redirect(http.StatusSeeOther, "/services?done=service-already-paused")
	}
	s.audit(c, action.ServicePause, name, models.OutcomeSuccess, pauseDetail(held, c.FormValue("reason")))
	return c.Redirect(http.StatusSeeOther, "/services?done=service-paused")
}

// pauseDetail is the audit entry's detail of a pause: its reason, or for
// a person's taking over the breaker's pause (Keep paused), that, the
// breaker's reason, and the person's own if they gave one (the pause keeps
// the breaker's).
func pauseDetail(held models.ServicePause, reason string) string {
	if !held.Kept() {
		return held.Reason
	}
	detail := "kept the automatic pause (" + held.Reason + ")"
	if r := strings.Join(strings.Fields(reason), " "); r != "" {
		detail += ": " + r
	}
	return detail
}

func (s *Server) resumeService(c echo.Context) error {
	if s.pauser == nil {
		return errBadRequest("pausing is not available on this server")
	}
	name := c.Param("name")
	who, _ := actor(c)
	was, err := s.pauser.Resume(c.Request().Context(), name, who)
	if err != nil {
		return err
	}
	return s.resumed(c, action.ServiceResume, "service", name, was)
}

// resumed audits the resume of a service or a source (what) and says on
// the Services page whether it had been paused.
func (s *Server) resumed(c echo.Context, act, what, name string, was bool) error {
	if !was {
		s.audit(c, act, name, models.OutcomeSuccess, "was not paused")
		return c.Redirect(http.StatusSeeOther, "/services?done="+what+"-not-paused")
	}
	s.audit(c, act, name, models.OutcomeSuccess, "")
	return c.Redirect(http.StatusSeeOther, "/services?done="+what+"-resumed")
}
