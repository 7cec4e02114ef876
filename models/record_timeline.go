package models

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"gorm.io/gorm"
)

// Kinds of entry on a record's timeline.
const (
	TimelineAttempt = "attempt" // a call to a provider, or a change of the link without one
	TimelineEvent   = "event"   // a webhook whose effect found one of the record's links
	TimelineAudit   = "audit"   // what a person or a token did to the record or its links
)

// TimelineEntry is one thing that happened to a record, from any of its
// sources; exactly one of Attempt, Event and Audit is set.
type TimelineEntry struct {
	At      time.Time
	Kind    string
	Attempt *Attempt
	Event   *ProcessedEvent
	Audit   *AuditEntry
}

// AuditTargets are the audit targets that name a record or one of its
// links, as web writes them.
func AuditTargets(localType, localID string, links []Link) []string {
	out := []string{localType + "/" + localID}
	for _, l := range links {
		out = append(out, fmt.Sprintf("link %d", l.ID))
	}
	return out
}

// RecordTimeline returns the newest limit entries about a record — its
// links' attempts, the webhook events about them, the audit entries on it
// and on them — oldest first, and whether older ones were left out. Three
// index ranges (attempts by link, events by link, audit by target), each
// cut at limit, then merged: a record with years of attempts costs what
// one with a few does.
func RecordTimeline(db *gorm.DB, localType, localID string, links []Link, limit int) ([]TimelineEntry, bool, error) {
	ids := make([]int64, len(links))
	for i, l := range links {
		ids[i] = l.ID
	}
	var out []TimelineEntry
	if len(ids) > 0 {
		var attempts []Attempt
		if err := db.Where("link_id IN ?", ids).Order("created_at DESC, id DESC").Limit(limit + 1).Find(&attempts).Error; err != nil {
			return nil, false, fmt.Errorf("read the record's attempts: %w", err)
		}
		for i := range attempts {
			out = append(out, TimelineEntry{At: attempts[i].CreatedAt, Kind: TimelineAttempt, Attempt: &attempts[i]})
		}
		var events []ProcessedEvent
		if err := db.Select("provider, event_id, event_type, received_at, outcome, error, duplicates, link_id").
			Where("link_id IN ?", ids).Order("received_at DESC").Limit(limit + 1).Find(&events).Error; err != nil {
			return nil, false, fmt.Errorf("read the record's webhook events: %w", err)
		}
		for i := range events {
			out = append(out, TimelineEntry{At: events[i].ReceivedAt, Kind: TimelineEvent, Event: &events[i]})
		}
	}
	var audit []AuditEntry
	if err := db.Where("target IN ?", AuditTargets(localType, localID, links)).Order("at DESC, id DESC").
		Limit(limit + 1).Find(&audit).Error; err != nil {
		return nil, false, fmt.Errorf("read the record's audit entries: %w", err)
	}
	for i := range audit {
		out = append(out, TimelineEntry{At: audit[i].At, Kind: TimelineAudit, Audit: &audit[i]})
	}
	// Oldest first. Each source was read newest first, so a stable sort of
	// the reversed list keeps, within one instant, each source's own order.
	slices.Reverse(out)
	rank := map[string]int{TimelineEvent: 0, TimelineAttempt: 1, TimelineAudit: 2}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return rank[out[i].Kind] < rank[out[j].Kind]
	})
	more := len(out) > limit
	if more {
		out = out[len(out)-limit:]
	}
	return out, more, nil
}
