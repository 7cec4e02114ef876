package alerts

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// The rules' names, as incidents and notifications carry them.
const (
	ServicePaused    = "service_paused"
	FailedLinks      = "failed_links"
	StuckQueue       = "stuck_queue"
	RefusedWebhooks  = "refused_webhooks"
	ReconcileWaiting = "reconcile_waiting"
	TaskFailing      = "task_failing"
)

// Rules are every rule's name, in the order the page and metrics list them.
var Rules = []string{ServicePaused, FailedLinks, StuckQueue, RefusedWebhooks, ReconcileWaiting, TaskFailing}

// finding is one rule holding for one subject now, in words.
type finding struct {
	rule, subject string
	title, text   string
	url           string
}

func (f finding) key() string { return f.rule + "\x00" + f.subject }

// rule evaluates one kind of trouble against the database.
type rule struct {
	name string
	off  bool
	eval func(ctx context.Context, db *gorm.DB, now time.Time) ([]finding, error)
}

func (a *Alerts) rules() []rule {
	r := a.cfg.Rules
	return []rule{
		{ServicePaused, r.ServicePaused.Off, a.pausedServices},
		{FailedLinks, r.FailedLinks.Off, a.failedLinks},
		{StuckQueue, r.StuckQueue.Off, a.stuckQueues},
		{RefusedWebhooks, r.RefusedWebhooks.Off, a.refusedWebhooks},
		{ReconcileWaiting, r.ReconcileWaiting.Off, a.waitingRuns},
		{TaskFailing, r.TaskFailing.Off, a.failingTasks},
	}
}

func (a *Alerts) pausedServices(_ context.Context, db *gorm.DB, now time.Time) ([]finding, error) {
	pauses, err := models.ListPauses(db)
	if err != nil {
		return nil, err
	}
	var out []finding
	for _, p := range pauses {
		d := now.Sub(p.PausedAt)
		if d < a.cfg.Rules.ServicePaused.After {
			continue
		}
		f := finding{rule: ServicePaused, subject: p.Service, url: "/services",
			title: fmt.Sprintf("%s has been paused for %s", p.Service, span(d))}
		switch {
		case p.Automatic():
			f.text = fmt.Sprintf("syncdesk paused %s by itself (%s). Its links wait and keep their attempts. %s",
				p.Service, p.Reason, a.whatLifts(p.Service))
		case p.Kept():
			f.text = fmt.Sprintf("syncdesk paused %s by itself (%s); %s kept it paused at %s UTC, so nothing tests the provider. "+
				"Its links wait and keep their attempts. Resume it on Services when the provider is ready.",
				p.Service, p.Reason, p.PausedBy, p.KeptAt.UTC().Format("2006-01-02 15:04"))
		default:
			f.text = fmt.Sprintf("%s paused %s (%s). Its links wait and keep their attempts. Resume it on Services when the provider is ready.",
				p.PausedBy, p.Service, orWords(p.Reason, "no reason given"))
		}
		out = append(out, f)
	}
	return out, nil
}

// whatLifts says what ends an automatic pause of service: its breaker's
// test calls while the breaker is on, else only a person, since nothing
// tests a provider whose breaker is off (see services.NewBreakers).
func (a *Alerts) whatLifts(service string) string {
	b, known := a.breakers[service]
	switch {
	case a.breakers == nil || known && !b.Off:
		when := "now and then"
		if known {
			when = "every " + span(b.ProbeEvery)
		}
		return fmt.Sprintf("A test call goes %s and resumes the service when the provider answers. "+
			"Check the provider's status; resume by hand on Services once it is back.", when)
	case known:
		return fmt.Sprintf("Its breaker has been turned off since, so nothing tests %s: resume it by hand on Services once the provider answers again.", service)
	}
	return fmt.Sprintf("%s is no longer configured, so nothing tests it: resume it on Services to lift the pause.", service)
}

// failedLinks reads the failed links on Failed per service as the
// refresh-stats task last counted them, and compares each count with a
// sample from the rule's window ago. Links put aside are left out: a
// person has dealt with them, and Failed, where the alert sends people,
// no longer lists them.
func (a *Alerts) failedLinks(_ context.Context, db *gorm.DB, now time.Time) ([]finding, error) {
	r := a.cfg.Rules.FailedLinks
	counts, err := models.FailedListCounts(db)
	if err != nil {
		return nil, err
	}
	before, err := models.SamplesAsOf(db, FailedLinks, now.Add(-r.Within))
	if err != nil {
		return nil, err
	}
	var out []finding
	samples := []models.AlertSample{{Rule: FailedLinks, TakenAt: now, Anchor: now}}
	for _, c := range counts {
		samples = append(samples, models.AlertSample{Rule: FailedLinks, Subject: c.Service, TakenAt: now, Anchor: now, Value: c.N})
		f := finding{rule: FailedLinks, subject: c.Service, url: "/links?" + url.Values{"service": {c.Service}, "status": {"failed"}}.Encode()}
		todo := "Open Failed to see what the provider answered: fix the cause, then retry the group."
		rise := int64(0)
		if s, ok := baseline(before, c.Service, now.Add(-r.Within)); ok {
			rise = c.N - s.Value
		}
		switch {
		case c.N > r.Over:
			f.title = fmt.Sprintf("%s has %d failed links", c.Service, c.N)
			f.text = fmt.Sprintf("More than %d links of %s failed and wait for a person. %s", r.Over, c.Service, todo)
		case rise >= r.Rise:
			f.title = fmt.Sprintf("Failed links of %s rose by %d in %s", c.Service, rise, span(r.Within))
			f.text = fmt.Sprintf("%s has %d failed links, %d more than %s ago. %s", c.Service, c.N, rise, span(r.Within), todo)
		default:
			continue
		}
		out = append(out, f)
	}
	return out, a.keepSamples(db, FailedLinks, samples, now.Add(-r.Within))
}

// baseline is the sample to compare subject's count with, as of at. Each
// check also samples the subject "" at 0: every subject it did not sample
// had no count then (no failed links, no refusals from the anchor's hour
// on). So a "" sample newer than the subject's own, both no newer than at,
// says the count was 0 since: a subject that dropped to no count is no
// longer sampled, and its last sample, however old, must not be the
// baseline. And a subject whose own samples are all younger than at counts
// from an older "" sample when there is one: from 0, not from its first
// count.
func baseline(before map[string]models.AlertSample, subject string, at time.Time) (models.AlertSample, bool) {
	s, ok := before[subject]
	m, marked := before[""]
	if marked && (!ok || m.TakenAt.After(s.TakenAt) && !m.TakenAt.After(at) || s.TakenAt.After(at) && m.TakenAt.Before(s.TakenAt)) {
		return m, true
	}
	return s, ok
}

// keepSamples stores this check's samples and drops those no longer needed.
func (a *Alerts) keepSamples(db *gorm.DB, rule string, samples []models.AlertSample, from time.Time) error {
	if err := models.RecordSamples(db, samples); err != nil {
		return err
	}
	return models.PruneSamples(db, rule, from)
}

func (a *Alerts) stuckQueues(_ context.Context, db *gorm.DB, now time.Time) ([]finding, error) {
	after := a.cfg.Rules.StuckQueue.After
	pauses, err := models.ListPauses(db)
	if err != nil {
		return nil, err
	}
	paused := make([]string, len(pauses))
	for i, p := range pauses {
		paused[i] = p.Service
	}
	stuck, err := models.StuckQueues(db, now.Add(-after), paused)
	if err != nil {
		return nil, err
	}
	out := make([]finding, len(stuck))
	for i, s := range stuck {
		out[i] = finding{rule: StuckQueue, subject: s.Service, url: "/services",
			title: fmt.Sprintf("Links to %s have waited %s to be sent", s.Service, span(now.Sub(s.Since))),
			text: fmt.Sprintf("The oldest link due to %s has waited since %s UTC and nothing sends it. "+
				"Check on Services whether %s is paused, rate-limited or slow; an admin sees on Schedules whether the send task runs.",
				s.Service, s.Since.UTC().Format("2006-01-02 15:04"), s.Service)}
	}
	return out, nil
}

// refusedReasons are the refusals that say a sender's signature does not
// match: a secret rotated on one side only, or a clock off.
var refusedReasons = []string{models.RefusedSignature, models.RefusedTimestamp}

// refusedWebhooks compares each service's refusals, summed from an hour
// on, with the same sum sampled the rule's window ago: the counts are kept
// per hour, and a sum from a fixed hour grows only by new refusals.
func (a *Alerts) refusedWebhooks(_ context.Context, db *gorm.DB, now time.Time) ([]finding, error) {
	r := a.cfg.Rules.RefusedWebhooks
	before, err := models.SamplesAsOf(db, RefusedWebhooks, now.Add(-r.Within))
	if err != nil {
		return nil, err
	}
	hour := now.UTC().Truncate(time.Hour)
	from := hour
	for _, s := range before {
		if s.Anchor.Before(from) {
			from = s.Anchor
		}
	}
	hours, err := models.RefusalHours(db, from, refusedReasons)
	if err != nil {
		return nil, err
	}
	sumFrom := func(service string, anchor time.Time) (n int64) {
		for _, h := range hours {
			if h.Service == service && !h.Hour.Before(anchor) {
				n += h.N
			}
		}
		return n
	}
	services := map[string]bool{}
	for _, h := range hours {
		services[h.Service] = true
	}
	var out []finding
	samples := []models.AlertSample{{Rule: RefusedWebhooks, TakenAt: now, Anchor: hour}}
	for service := range services {
		samples = append(samples, models.AlertSample{Rule: RefusedWebhooks, Subject: service, TakenAt: now, Anchor: hour, Value: sumFrom(service, hour)})
		s, ok := baseline(before, service, now.Add(-r.Within))
		if !ok {
			continue // the first check: the next has a baseline
		}
		if n := sumFrom(service, s.Anchor) - s.Value; n > r.Over {
			out = append(out, finding{rule: RefusedWebhooks, subject: service, url: "/events?" + url.Values{"service": {service}}.Encode(),
				title: fmt.Sprintf("%d webhooks from %s refused in %s", n, service, span(r.Within)),
				text: fmt.Sprintf("syncdesk refused webhooks from %s for their signature or timestamp, so their changes are not applied. "+
					"Check that the webhook secret in syncdesk's settings matches the one %s signs with, and that its clock is right. "+
					"The Events page shows the last refusal.", service, service)})
		}
	}
	return out, a.keepSamples(db, RefusedWebhooks, samples, now.Add(-r.Within))
}

func (a *Alerts) waitingRuns(_ context.Context, db *gorm.DB, _ time.Time) ([]finding, error) {
	runs, err := models.WaitingRuns(db)
	if err != nil {
		return nil, err
	}
	out := make([]finding, len(runs))
	for i, r := range runs {
		f := finding{rule: ReconcileWaiting, subject: r.Service, url: fmt.Sprintf("/reconcile/%d", r.ID)}
		if r.Status == models.RunAwaiting {
			f.title = fmt.Sprintf("Reconciliation run %d of %s is waiting for someone to confirm it", r.ID, r.Service)
			f.text = "It found more to fix than it may fix on its own and stopped. Open the run, look at what it would change, and confirm or cancel it."
		} else {
			f.title = fmt.Sprintf("Reconciliation run %d of %s has %s waiting for a person", r.ID, r.Service, plural(int64(r.Reported), "finding"))
			f.text = "Some differences have no safe automatic fix (a duplicate, a policy that says report). Open the run and decide each one."
		}
		out[i] = f
	}
	return out, nil
}

func (a *Alerts) failingTasks(_ context.Context, db *gorm.DB, _ time.Time) ([]finding, error) {
	tasks, err := models.FailingTasks(db, a.cfg.Rules.TaskFailing.Times)
	if err != nil {
		return nil, err
	}
	var out []finding
	for _, t := range tasks {
		if a.tasks != nil && !a.tasks[t.Name] {
			continue // removed from the configuration: its incident resolves
		}
		out = append(out, finding{rule: TaskFailing, subject: t.Name, url: "/schedules",
			title: fmt.Sprintf("The scheduled task %s failed %d times in a row", t.Name, t.Failures),
			text:  fmt.Sprintf("Its last run said: %s. Fix the cause; then an admin runs it now on Schedules to check.", orWords(t.LastError, "no error kept"))})
	}
	return out, nil
}

// span says a duration the way a person does: "12 minutes", "3 hours".
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return plural(int64(d/time.Second), "second")
	case d < 2*time.Hour:
		return plural(int64(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return plural(int64(d/time.Hour), "hour")
	}
	return plural(int64(d/(24*time.Hour)), "day")
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func orWords(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
