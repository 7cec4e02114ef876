package models

import (
	"strconv"
	"strings"
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

// EventsNaming returns the applied events of provider received between from
// and to whose payload holds one of the strings names as a JSON string (an
// object's id or our key), oldest first; it reads at most 200 events.
func EventsNaming(db *gorm.DB, provider string, names []string, from, to time.Time) ([]ProcessedEvent, error) {
	var rows []ProcessedEvent
	err := db.Where("provider = ? AND outcome = ? AND received_at >= ? AND received_at <= ?", provider, EventApplied, from, to).
		Order("received_at").Limit(200).Find(&rows).Error
	var out []ProcessedEvent
	for _, ev := range rows {
		for _, n := range names {
			if n != "" && strings.Contains(ev.Payload, strconv.Quote(n)) {
				out = append(out, ev)
				break
			}
		}
	}
	return out, err
}
