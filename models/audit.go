package models

import (
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Audit outcomes.
const (
	OutcomeSuccess   = "success"
	OutcomeFailure   = "failure"
	OutcomeDenied    = "denied"
	OutcomeThrottled = "throttled"
)

// AuditEntry is one append-only row of who did what, when, to what.
type AuditEntry struct {
	ID      int64
	At      time.Time
	Actor   string // an email, "api:NAME" or "system"
	UserID  *int64
	Action  string // e.g. "auth.login", "user.disable"
	Target  string
	Outcome string
	IP      string
	Detail  string
}

// Audit appends an entry. The time is stored in UTC.
func Audit(db *gorm.DB, e AuditEntry) error {
	e.ID = 0
	e.At = e.At.UTC()
	if err := db.Create(&e).Error; err != nil {
		return fmt.Errorf("write audit entry %s: %w", e.Action, err)
	}
	return nil
}

// AuditFilter narrows the audit log; empty fields match everything.
type AuditFilter struct {
	// ActorPrefix matches the start of the actor: "admin" finds
	// admin@example.com. Emails are stored lowercased, so the lowercased
	// prefix finds them whatever the case typed; a token's "api:Name" also
	// matches as typed.
	ActorPrefix    string
	Action, Target string
	// HideActions leaves out entries of these actions (sign-ins and
	// sign-outs, which flood the log).
	HideActions  []string
	Since, Until time.Time
	BeforeID     int64 // keyset cursor: entries older than this id
	Limit        int
}

// ListAudit returns entries newest first.
func ListAudit(db *gorm.DB, f AuditFilter) ([]AuditEntry, error) {
	q := db.Model(&AuditEntry{})
	if who := strings.TrimSpace(f.ActorPrefix); who != "" {
		// A LIKE on the raw column: the list walks the id index newest first
		// and stops at a page; the (actor, at) index would serve a prefix
		// only under a C collation.
		like := func(p string) string { return likeEscaper.Replace(p) + "%" }
		lw := strings.ToLower(who)
		cond, args := `actor LIKE ? ESCAPE '\'`, []any{like(lw)}
		if lw != who {
			cond, args = cond+` OR actor LIKE ? ESCAPE '\'`, append(args, like(who))
		}
		q = q.Where("("+cond+")", args...)
	}
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	if f.Target != "" {
		q = q.Where("target = ?", f.Target)
	}
	if len(f.HideActions) > 0 {
		q = q.Where("action NOT IN ?", f.HideActions)
	}
	if !f.Since.IsZero() {
		q = q.Where("at >= ?", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		q = q.Where("at < ?", f.Until.UTC())
	}
	if f.BeforeID > 0 {
		q = q.Where("id < ?", f.BeforeID)
	}
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	var out []AuditEntry
	return out, q.Order("id DESC").Limit(f.Limit).Find(&out).Error
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

// CountFailures counts failed attempts at action since a time, for one target
// (an account) or one client IP; login throttling reads it.
func CountFailures(db *gorm.DB, action, target, ip string, since time.Time) (int64, error) {
	q := db.Model(&AuditEntry{}).Where("action = ? AND outcome = ? AND at >= ?", action, OutcomeFailure, since.UTC())
	if target != "" {
		q = q.Where("target = ?", target)
	}
	if ip != "" {
		q = q.Where("ip = ?", ip)
	}
	var n int64
	return n, q.Count(&n).Error
}
