package config

import (
	"fmt"
	"time"
)

// AlertRules say when an incident opens (sync/alerts). A value left unsaid
// takes its default (DefaultAlertRules); each rule can be turned off.
type AlertRules struct {
	// ServicePaused: a service paused, by hand or by its breaker, for
	// longer than After.
	ServicePaused AfterRule `yaml:"service_paused"`
	// FailedLinks: a service's failed links over Over, or risen by Rise
	// within Within.
	FailedLinks FailedLinksRule `yaml:"failed_links"`
	// StuckQueue: a service's oldest due link waiting longer than After
	// (paused services do not count: their links wait on purpose).
	StuckQueue AfterRule `yaml:"stuck_queue"`
	// RefusedWebhooks: more than Over webhook deliveries of a service
	// refused for their signature or timestamp within Within.
	RefusedWebhooks CountRule `yaml:"refused_webhooks"`
	// ReconcileWaiting: a service's latest reconciliation has findings
	// only a person can decide, or waits for a confirmation.
	ReconcileWaiting SwitchRule `yaml:"reconcile_waiting"`
	// TaskFailing: a scheduled task failed Times runs in a row.
	TaskFailing TimesRule `yaml:"task_failing"`
}

// AfterRule fires when something has lasted longer than After.
type AfterRule struct {
	After time.Duration `yaml:"after"`
	Off   bool          `yaml:"off"`
}

// FailedLinksRule fires on a count over Over, or a rise by Rise within Within.
type FailedLinksRule struct {
	Over   int64         `yaml:"over"`
	Rise   int64         `yaml:"rise"`
	Within time.Duration `yaml:"within"`
	Off    bool          `yaml:"off"`
}

// CountRule fires on more than Over within Within.
type CountRule struct {
	Over   int64         `yaml:"over"`
	Within time.Duration `yaml:"within"`
	Off    bool          `yaml:"off"`
}

// SwitchRule has nothing to set but whether it is on.
type SwitchRule struct {
	Off bool `yaml:"off"`
}

// TimesRule fires after Times in a row.
type TimesRule struct {
	Times int  `yaml:"times"`
	Off   bool `yaml:"off"`
}

// DefaultAlertRules are the rules' values when a file leaves them unsaid.
var DefaultAlertRules = AlertRules{
	ServicePaused:   AfterRule{After: 10 * time.Minute},
	FailedLinks:     FailedLinksRule{Over: 50, Rise: 20, Within: 15 * time.Minute},
	StuckQueue:      AfterRule{After: 15 * time.Minute},
	RefusedWebhooks: CountRule{Over: 10, Within: 5 * time.Minute},
	TaskFailing:     TimesRule{Times: 3},
}

// withDefaults fills in the values left zero.
func (r AlertRules) withDefaults() AlertRules {
	d := DefaultAlertRules
	orDuration(&r.ServicePaused.After, d.ServicePaused.After)
	orInt(&r.FailedLinks.Over, d.FailedLinks.Over)
	orInt(&r.FailedLinks.Rise, d.FailedLinks.Rise)
	orDuration(&r.FailedLinks.Within, d.FailedLinks.Within)
	orDuration(&r.StuckQueue.After, d.StuckQueue.After)
	orInt(&r.RefusedWebhooks.Over, d.RefusedWebhooks.Over)
	orDuration(&r.RefusedWebhooks.Within, d.RefusedWebhooks.Within)
	if r.TaskFailing.Times == 0 {
		r.TaskFailing.Times = d.TaskFailing.Times
	}
	return r
}

func orDuration(v *time.Duration, def time.Duration) {
	if *v == 0 {
		*v = def
	}
}

func orInt(v *int64, def int64) {
	if *v == 0 {
		*v = def
	}
}

// validate checks the rules, their defaults filled in.
func (r AlertRules) validate() []error {
	r = r.withDefaults()
	var errs []error
	bad := func(setting, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting alerts.rules.%s: %s", setting, fmt.Sprintf(format, a...)))
	}
	duration := func(setting string, v time.Duration) {
		if v < time.Minute || v > 7*24*time.Hour {
			bad(setting, "must be a duration between 1m and 168h such as 15m, got %v", v)
		}
	}
	count := func(setting string, v int64) {
		if v < 1 || v > 100000000 {
			bad(setting, "must be a number between 1 and 100000000, got %d", v)
		}
	}
	duration("service_paused.after", r.ServicePaused.After)
	count("failed_links.over", r.FailedLinks.Over)
	count("failed_links.rise", r.FailedLinks.Rise)
	duration("failed_links.within", r.FailedLinks.Within)
	duration("stuck_queue.after", r.StuckQueue.After)
	count("refused_webhooks.over", r.RefusedWebhooks.Over)
	duration("refused_webhooks.within", r.RefusedWebhooks.Within)
	if r.TaskFailing.Times < 1 || r.TaskFailing.Times > 1000 {
		bad("task_failing.times", "must be between 1 and 1000 failed runs in a row, got %d", r.TaskFailing.Times)
	}
	return errs
}
