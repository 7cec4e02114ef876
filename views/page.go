// Package views renders syncdesk's pages with templ. It knows nothing of the
// database: handlers build the view models defined here, shaped like the screen.
package views

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Viewer is the signed-in person, as the layout shows them.
type Viewer struct {
	Email string
	Name  string
	Role  string
}

// CanOperate reports whether the viewer may press operator buttons.
func (v Viewer) CanOperate() bool { return v.Role == "operator" || v.Role == "admin" }

// IsAdmin reports whether the viewer may manage users and tokens, see the
// services' configuration and the schedules.
func (v Viewer) IsAdmin() bool { return v.Role == "admin" }

// Page is what every signed-in page's layout needs.
type Page struct {
	Title  string
	Active string // the nav entry to highlight, by path
	Viewer Viewer
	CSRF   string
	Flash  string // a one-line confirmation after an action
	// FlashWarn shows the flash in the warning colour: the action stopped
	// something (a pause) or did nothing.
	FlashWarn bool
	Now       time.Time
	Version   string
	// Paused lists the services whose sending is paused, shown loudly on every page.
	Paused []PausedService
	// OpenIncidents is how many alerts are open, counted beside Alerts in
	// the navigation.
	OpenIncidents int64
	// URL is the page's own address, without a flash's parameters: what its
	// live region polls. "" (a page answering a form, which has no address
	// of its own) keeps the page still.
	URL string
}

// PausedService is a service whose sending an operator paused.
type PausedService struct {
	Name   string
	By     string
	Since  time.Time
	Reason string
	// Automatic: the service's breaker paused it, and its probes resume it.
	Automatic bool
	// KeptBy took the breaker's pause over at KeptAt (Keep paused): By is
	// then the breaker, and the pause lasts until someone resumes it.
	KeptBy string
	KeptAt time.Time
}

// NavEntry is one item of the main navigation.
type NavEntry struct {
	Path, Label string
	AdminOnly   bool
}

// Nav lists the pages in the order of the navigation bar. Each page adds its
// entry here when it lands.
var Nav = []NavEntry{
	{Path: "/", Label: "Overview"},
	{Path: "/links", Label: "Links"},
	{Path: "/failed", Label: "Failed"},
	{Path: "/events", Label: "Webhooks"},
	{Path: "/services", Label: "Services"},
	{Path: "/reconcile", Label: "Reconciliation"},
	{Path: "/alerts", Label: "Alerts"},
	{Path: "/schedules", Label: "Schedules", AdminOnly: true},
	{Path: "/audit", Label: "Audit log"},
	{Path: "/users", Label: "Users", AdminOnly: true},
}

// Ago says how long ago t was, in the words a person uses.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 10*time.Second && future:
		return "in a few seconds"
	case d < 10*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	default:
		s = fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// Clock is the absolute UTC time people match against a customer's report:
// "03:51:17" on now's day, "29 Nov 03:51" earlier in the year, "29 Nov 2025
// 03:51" before that.
func Clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	switch {
	case t.IsZero():
		return "never"
	case t.YearDay() == now.YearDay() && t.Year() == now.Year():
		return t.Format("15:04:05")
	case t.Year() == now.Year():
		return t.Format("2 Jan 15:04")
	default:
		return t.Format("2 Jan 2006 15:04")
	}
}

// Recent reports whether t lies less than an hour before now (or in the
// future): such times read best as "14 min ago"; older ones as a clock time.
func Recent(t, now time.Time) bool { return now.Sub(t) < time.Hour }

// Past is t, or now if t is later: a time that has happened, stamped by
// another clock a moment after the page took now (a task that started while
// the page rendered), reads "just now", not "in a few seconds".
func Past(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}

// UTC formats t as an absolute UTC time for tooltips and exports.
func UTC(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ISO formats t for a <time datetime> attribute.
func ISO(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// urlQuery escapes a value for a query string.
func urlQuery(s string) string { return url.QueryEscape(s) }

// Count writes a count with its thousands grouped, as people read them:
// 1,234,567.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
