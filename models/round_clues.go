package models

import (
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models/action"
)

// What made a link send again is not kept on its attempts: a person's
// button leaves an audit entry, a reconciliation's fix a discrepancy, a
// webhook an event. These read those traces back, for the link page to say
// why each round of attempts began.

// LinkButtonEntries returns the successful Sync now, Retry and Re-create
// entries on link id between from and to, oldest first.
func LinkButtonEntries(db *gorm.DB, id int64, from, to time.Time) ([]AuditEntry, error) {
	var out []AuditEntry
	err := db.Where("action IN ? AND outcome = ? AND target = ? AND at >= ? AND at <= ?",
		[]string{action.LinkSync, action.LinkRetry, action.LinkRecreate}, OutcomeSuccess,
		"link "+strconv.FormatInt(id, 10), from.UTC(), to.UTC()).Order("at").Limit(500).Find(&out).Error
	return out, err
}

// LinkFix is a reconciliation's applied fix of one link.
type LinkFix struct {
	RunID     int64
	Kind      string
	StartedAt time.Time // the run's start: the fix came after it
}

// LinkFixes returns the fixes of link id applied by the service's runs
// started between from and to, oldest first.
func LinkFixes(db *gorm.DB, id int64, service string, from, to time.Time) ([]LinkFix, error) {
	var out []LinkFix
	err := db.Table("discrepancies AS d").Select("d.run_id, d.kind, r.started_at").
		Joins("JOIN reconciliation_runs AS r ON r.id = d.run_id").
		Where("r.service = ? AND r.started_at >= ? AND r.started_at <= ? AND d.link_id = ? AND d.status = ?",
			service, from, to, id, DiscrepancyFixed).
		Order("r.started_at").Limit(100).Scan(&out).Error
	return out, err
}

// LinkEvents returns the applied webhook events about link id (the inbox
// names the link on each event it applies) received between from and to,
// oldest first, at most 500: one read of an index, not a search of payloads.
func LinkEvents(db *gorm.DB, id int64, from, to time.Time) ([]ProcessedEvent, error) {
	var out []ProcessedEvent
	err := db.Select("provider, event_id, event_type, received_at, outcome, link_id").
		Where("link_id = ? AND outcome = ? AND received_at >= ? AND received_at <= ?", id, EventApplied, from, to).
		Order("received_at").Limit(500).Find(&out).Error
	return out, err
}
