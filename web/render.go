package web

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/views"
)

// render writes a templ component with status 200.
func (s *Server) render(c echo.Context, comp templ.Component) error {
	return s.renderStatus(c, http.StatusOK, comp)
}

// renderStatus writes a templ component with the given status.
func (s *Server) renderStatus(c echo.Context, status int, comp templ.Component) error {
	if status == http.StatusOK && livePoll(c) {
		return s.renderLive(c, comp)
	}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response())
}

// page builds the layout's view model for the current request.
func (s *Server) page(c echo.Context, title, active string) views.Page {
	p := views.Page{Title: title, Active: active, CSRF: csrfToken(c), Now: s.clock.Now(), Version: s.version}
	if c.Request().Method == http.MethodGet {
		// A page answering a form (a refusal) has no address of its own to
		// ask again: a poll of the form's would be refused. Its handler may
		// give it its page's address.
		p.URL = liveURL(c.Request().URL)
	}
	if u := currentUser(c); u != nil {
		p.Viewer = views.Viewer{Email: u.Email, Name: u.Name, Role: string(u.Role)}
	}
	p.Flash, p.FlashWarn = flashFor(c)
	if p.Viewer.Email != "" {
		p.Paused = s.pausedServices(c)
		p.OpenIncidents = s.openIncidents(c)
	}
	return p
}

// openIncidents counts the open alerts for the navigation. The read is
// detached: its answer serves every page for alertsTTL, so one person who
// closed a tab does not cut short the read the others wait on.
func (s *Server) openIncidents(c echo.Context) int64 {
	if c.Request().Context().Err() != nil {
		return s.alerts.last() // nobody is left to see it: no read for them
	}
	return s.alerts.count(s.detachedDB(c), s.clock.Now(), s.log)
}

// openAlerts caches the count of open incidents for alertsTTL: every page
// and every live poll of every tab shows it, and a check opens incidents
// every half minute at most.
type openAlerts struct {
	mu      sync.Mutex
	fetched time.Time
	n       int64
}

const alertsTTL = 2 * time.Second

func (o *openAlerts) last() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

func (o *openAlerts) count(db *gorm.DB, now time.Time, log *slog.Logger) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.fetched.IsZero() && now.Sub(o.fetched) < alertsTTL && !now.Before(o.fetched) {
		return o.n
	}
	o.fetched = now // after a failure too: the last count stands until the next try
	ctx, cancel := context.WithTimeout(db.Statement.Context, alertsTTL)
	defer cancel()
	byRule, err := models.CountOpenIncidents(db.WithContext(ctx))
	if err != nil {
		log.Warn("count open alerts for the navigation; showing the last count", "err", err)
		return o.n
	}
	o.n = 0
	for _, k := range byRule {
		o.n += k
	}
	return o.n
}

// pausedServices lists the paused services for the banner, from the
// Pauser's cache. A failed read shows the last known pauses (the Pauser logs it).
func (s *Server) pausedServices(c echo.Context) []views.PausedService {
	if s.pauser == nil {
		return nil
	}
	pauses, _ := s.pauser.List(c.Request().Context())
	out := make([]views.PausedService, len(pauses))
	for i, ps := range pauses {
		out[i] = views.PausedService{Name: ps.Service, By: ps.PausedBy, Since: ps.PausedAt, Reason: ps.Reason,
			Automatic: ps.Automatic()}
		if ps.Kept() {
			// The breaker paused it, for its reason; the person keeps it paused.
			out[i].By, out[i].KeptBy, out[i].KeptAt = models.AutomaticPauser, ps.PausedBy, *ps.KeptAt
		}
	}
	return out
}

// flash is a fixed confirmation text; warn marks one that tells of
// something now not happening (a pause), shown in the warning colour.
type flash struct {
	text string
	warn bool
}

// flashes are the confirmations a redirect can ask for with ?done=KEY. Only
// these fixed texts can appear, so a crafted URL cannot put words on a page.
var flashes = map[string]flash{
	// h-alerts (issue 16): acknowledging an incident.
	"incident-acknowledged":         {"You are down as on it; the others see your name on the incident.", false},
	"incident-already-acknowledged": {"Someone acknowledged that incident already, or it is over; nothing changed.", true},

	"service-paused":         {"Sending is paused. Links to the service wait in the queue; nothing is lost.", true},
	"service-already-paused": {"That service was already paused; its first pause stands.", true},
	"service-resumed":        {"Sending is resumed. Waiting links go out within a few seconds.", false},
	"service-not-paused":     {"That service was not paused; nothing changed.", false},
	"source-paused":          {"Reading the source is paused on every instance; its rows wait in its database.", true},
	"source-already-paused":  {"That source was already paused; its first pause stands.", true},
	"source-resumed":         {"Reading the source is resumed from its cursor, within a poll.", false},
	"source-not-paused":      {"That source was not paused; nothing changed.", false},
	"role-changed":           {"The role is changed; it applies from their next page.", false},
	"user-disabled":          {"The user is disabled and signed out everywhere.", false},
	"token-revoked":          {"The token is revoked; calls that use it now get 401.", false},
	"link-failed":            {"The link is marked failed; it will not be retried until someone asks.", false},
	"link-recreated":         {"A new create is queued, with a new idempotency key.", false},
	"event-replayed":         {"The event was replayed. What it did is at the top of Replays below.", false},
	"task-started":           {"The task was started. Its outcome shows here when it finishes: reload the page in a moment.", false},
	"task-busy":              {"That task is already running, so it was not started a second time.", false},
	"runs-started":           {"A reconciliation run was started for every service. They are listed below; open one to follow it.", false},
	"runs-started-some-busy": {"A reconciliation run was started for every service that was not already being reconciled. They are listed below.", false},
	"link-put-aside":         {"The link is put aside: it stays failed, off the Failed list. Bring back puts it on the list again.", false},
	"link-brought-back":      {"The link is back on the Failed list.", false},
	"group-put-aside":        {"The group's failed links are put aside: find them under Put aside. Bring back puts them on Failed again.", false},
	"group-brought-back":     {"The group's links are back on the Failed list.", false},
	"user-enabled":           {"The user is enabled: they can sign in again, with their old password and role.", false},
	"user-not-disabled":      {"That user was not disabled; nothing changed.", false},
	"runs-all-busy":          {"Every service is already being reconciled, so no new run was started. The runs going are listed below.", false},
	// h-recon (issue 14): reconciliation actions.
	"disc-linked":          {"The object is linked to the record; the record is sent to it as an update.", false},
	"disc-kept":            {"The object kept is linked to the record. Delete the others at the provider: syncdesk does not.", false},
	"disc-dismissed":       {"The discrepancy is dismissed, with your reason.", false},
	"dryrun-applied":       {"The dry run's open fixes were applied; what each did is below.", false},
	"dryrun-applied-valve": {"Fixes were applied up to the safety valve; confirm below to apply the rest.", true},
}

// flashFor reads ?done= (and, for a bulk retry, its counts) into the words
// to show. Unknown keys and counts that are not small numbers show nothing.
func flashFor(c echo.Context) (string, bool) {
	done := c.QueryParam("done")
	if done == "bulk-retry" {
		return bulkRetryFlash(c)
	}
	f := flashes[done]
	return f.text, f.warn
}

// bulkRetryFlash says what a bulk retry did, from the counts its redirect
// carries (?queued=&busy=&gone=).
func bulkRetryFlash(c echo.Context) (string, bool) {
	var n [3]int
	for i, name := range []string{"queued", "busy", "gone"} {
		v, err := strconv.Atoi(c.QueryParam(name))
		if err != nil || v < 0 || v > maxBulk {
			return "", false
		}
		n[i] = v
	}
	var parts []string
	switch {
	case n[0] > 0:
		parts = append(parts, plural(n[0], "link is", "links are")+" queued to be sent again; they leave this page as they succeed.")
	case n[1] == 0 && n[2] == 0:
		return "Nothing was retried.", true
	default:
		parts = append(parts, "No link was queued.")
	}
	if n[1] > 0 {
		parts = append(parts, plural(n[1], "link was", "links were")+" already in progress, so left alone.")
	}
	if n[2] > 0 {
		parts = append(parts, plural(n[2], "link was", "links were")+" no longer there.")
	}
	return strings.Join(parts, " "), n[0] == 0
}

// plural writes "1 link is" or "3 links are" style counts.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return views.Count(int64(n)) + " " + many
}
