// Package alerts tells the desk's people what needs them: rules checked
// against the database open an incident per rule and subject, repeat it
// while it lasts and resolve it when it clears; each of those is a
// notification per channel, delivered apart from the checks, with retries.
// Instances sharing a database share the incidents and the notifications:
// an incident opens once and a notification is sent once across them.
package alerts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Alerts checks the rules and delivers the notifications of one instance.
type Alerts struct {
	db       *gorm.DB
	cfg      config.Alerts
	channels map[string]notify.Channel
	names    []string // the channels', sorted: a notification row per name
	clock    clock.Clock
	log      *slog.Logger
	redactor *redact.Redactor
	owner    string          // this instance's claims
	tasks    map[string]bool // the scheduler's; nil: every task with a row
	// breakers are the services' breaker settings; nil: not told, and an
	// automatic pause is taken to be probed.
	breakers map[string]config.Breaker

	// The delivery's knobs; tests shorten them.
	// sendTimeout bounds a send to a channel the configuration does not
	// describe (tests give their own); a configured channel's own timeout
	// bounds its sends, so that a hanging receiver holds one try only.
	sendTimeout time.Duration
	lease       time.Duration // a claim's; longer than any send's limit
	maxTries    int
	batch       int
	jitter      func() float64 // in [0, 1)
}

// New returns the alerts of one instance. channels maps a channel's name to
// where it sends; nil or empty queues no notification (incidents still
// open, for the page).
func New(db *gorm.DB, cfg config.Alerts, channels map[string]notify.Channel, clk clock.Clock, log *slog.Logger) *Alerts {
	names := make([]string, 0, len(channels))
	for name := range channels {
		names = append(names, name)
	}
	sort.Strings(names)
	r := redact.New(nil)
	r.AddSecrets(cfg.Secrets()...)
	if log == nil {
		log = slog.Default()
	}
	lease := time.Minute
	for _, ch := range cfg.Channels {
		lease = max(lease, ch.SendTimeout()+30*time.Second)
	}
	return &Alerts{db: db, cfg: cfg.WithDefaults(), channels: channels, names: names, clock: clk, log: log, redactor: r,
		owner: "alerts-" + randomHex(8), sendTimeout: config.DefaultChannelTimeout, lease: lease, maxTries: 10, batch: 20,
		jitter: mrand.Float64}
}

// SetTasks names the tasks the scheduler runs, before the checks start:
// task_failing leaves out the rows of tasks no longer configured, whose
// failures in a row can never end (nothing runs them again).
func (a *Alerts) SetTasks(names []string) {
	a.tasks = make(map[string]bool, len(names))
	for _, n := range names {
		a.tasks[n] = true
	}
}

// SetBreakers gives the services' breaker settings, before the checks
// start. Only a configured service whose breaker is on is probed: an
// automatic pause of one whose breaker was turned off since (or that is no
// longer configured) lasts until someone resumes it, and service_paused
// says so rather than promise a probe.
func (a *Alerts) SetBreakers(cfgs map[string]config.Breaker) {
	a.breakers = cfgs
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// Check evaluates every rule once and opens, repeats or resolves the
// incidents it finds. It sends nothing itself: the notifications it queues
// go out with Deliver, so a receiver that hangs never holds a check. A
// rule that cannot be read leaves its incidents as they are.
func (a *Alerts) Check(ctx context.Context) error {
	db := a.db.WithContext(ctx)
	now := a.clock.Now()
	found := map[string]finding{}
	unread, off := map[string]bool{}, map[string]bool{}
	var errs []error
	for _, r := range a.rules() {
		if r.off {
			off[r.name] = true // its open incidents resolve: nobody is told of them any more
			continue
		}
		fs, err := r.eval(ctx, db, now)
		if err != nil {
			unread[r.name] = true
			errs = append(errs, fmt.Errorf("alert rule %s: %w", r.name, err))
			continue
		}
		for _, f := range fs {
			found[f.key()] = f
		}
	}
	open, err := models.OpenIncidents(db)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, inc := range open {
		key := finding{rule: inc.Rule, subject: inc.Subject}.key()
		f, holds := found[key]
		delete(found, key)
		switch {
		case holds:
			errs = append(errs, a.repeat(db, inc, f, now))
		case !unread[inc.Rule] && !inc.OpenedAt.After(now):
			// An incident opened after this check began was opened on
			// fresher reads than this check's (another instance's check).
			errs = append(errs, a.resolve(db, inc, now, off[inc.Rule]))
		}
	}
	for _, f := range found {
		errs = append(errs, a.open(db, f, now))
	}
	if _, err := models.PruneIncidents(db, now.Add(-incidentRetention)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// incidentRetention is how long an incident that is over is kept.
const incidentRetention = 90 * 24 * time.Hour

func (a *Alerts) open(db *gorm.DB, f finding, now time.Time) error {
	opened, err := models.OpenIncident(db, models.Incident{Rule: f.rule, Subject: f.subject, URL: f.url},
		models.IncidentChange{State: string(notify.Opened), Title: f.title, Text: f.text, Channels: a.names, At: now})
	if opened {
		a.log.Warn("incident opened", "rule", f.rule, "subject", f.subject, "title", f.title)
	}
	return err
}

// repeat sends an open incident again once the repeat interval has passed
// since it was last sent. Until then its words follow what the check finds
// (the Alerts page shows "crm has 213 failed links", not the 65 it opened
// with), and nobody is told.
func (a *Alerts) repeat(db *gorm.DB, inc models.Incident, f finding, now time.Time) error {
	if now.Sub(inc.NotifiedAt) < a.cfg.Repeat {
		if f.title == inc.Title && f.text == inc.Text {
			return nil
		}
		return models.RewordIncident(db, inc.ID, f.title, f.text)
	}
	_, err := models.RepeatIncident(db, inc.ID, inc.NotifiedAt,
		models.IncidentChange{State: string(notify.Repeated), Title: f.title, Text: f.text, Channels: a.names, At: now})
	return err
}

// resolve closes an incident whose condition cleared, or whose rule was
// turned off (ruleOff), which says nothing of whether the problem is over.
func (a *Alerts) resolve(db *gorm.DB, inc models.Incident, now time.Time, ruleOff bool) error {
	text := fmt.Sprintf("This cleared at %s UTC, %s after it began. Nothing more to do for it.",
		now.UTC().Format("2006-01-02 15:04"), span(now.Sub(inc.OpenedAt)))
	if ruleOff {
		text = fmt.Sprintf("Its alert rule was turned off at %s UTC, %s after this began: it is no longer watched, "+
			"and whether the problem is over was not checked.", now.UTC().Format("2006-01-02 15:04"), span(now.Sub(inc.OpenedAt)))
	}
	resolved, err := models.ResolveIncident(db, inc.ID,
		models.IncidentChange{State: string(notify.Resolved), Title: inc.Title, Text: text, Channels: a.names, At: now})
	if resolved {
		a.log.Info("incident resolved", "rule", inc.Rule, "subject", inc.Subject, "title", inc.Title)
	}
	return err
}

// link is the address of a page for a notification: absolute when the
// desk's address is configured.
func (a *Alerts) link(path string) string {
	if a.cfg.DeskURL == "" || path == "" {
		return path
	}
	return strings.TrimSuffix(a.cfg.DeskURL, "/") + path
}
