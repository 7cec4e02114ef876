package models

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// EventCursor is the position of one event in the newest-first list: the
// list continues with the events that sort after it.
type EventCursor struct {
	ReceivedAt time.Time
	Provider   string
	EventID    string
}

// CursorOf returns the list position of ev.
func CursorOf(ev ProcessedEvent) EventCursor {
	return EventCursor{ReceivedAt: ev.ReceivedAt, Provider: ev.Provider, EventID: ev.EventID}
}

// EventFilter narrows the events list; empty fields match everything.
type EventFilter struct {
	Provider string
	Type     string
	Outcome  string
	// HideIgnored leaves out the events that had nothing to do.
	HideIgnored bool
	After       *EventCursor // nil for the first (newest) page
	Limit       int
}

// ListEvents returns processed events newest first, by (received_at,
// provider, event_id) so that events received in the same instant still have
// one order. Paging is by keyset, not OFFSET, so the hundredth page costs what
// the first does; migration 0005 gives every filter an index in that order.
func ListEvents(db *gorm.DB, f EventFilter) ([]ProcessedEvent, error) {
	// The payload is left out: the list never shows it, and it is the big column.
	q := db.Model(&ProcessedEvent{}).
		Select("provider, event_id, event_type, received_at, outcome, error, duplicates, last_duplicate_at")
	if f.Provider != "" {
		q = q.Where("provider = ?", f.Provider)
	}
	if f.Type != "" {
		q = q.Where("event_type = ?", f.Type)
	}
	if f.Outcome != "" {
		q = q.Where("outcome = ?", f.Outcome)
	} else if f.HideIgnored {
		q = q.Where("outcome <> ?", EventIgnored)
	}
	if c := f.After; c != nil {
		// The plain "received_at <= ?" lets both databases seek the index to
		// the cursor; the rest breaks ties within that instant.
		q = q.Where("received_at <= ? AND (received_at < ? OR (received_at = ? AND (provider < ? OR (provider = ? AND event_id < ?))))",
			c.ReceivedAt, c.ReceivedAt, c.ReceivedAt, c.Provider, c.Provider, c.EventID)
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	var out []ProcessedEvent
	err := q.Order("received_at DESC, provider DESC, event_id DESC").Limit(f.Limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// EventTypes lists the event types the inbox has stored, up to limit, in
// order. A DISTINCT would read the whole index; this walks the event_type
// index one seek per type (a "loose index scan"), so a million events of a
// dozen types cost a dozen seeks, on SQLite and Postgres alike.
func EventTypes(db *gorm.DB, limit int) ([]string, error) {
	var out []string
	err := db.Raw(`WITH RECURSIVE t(x) AS (
		SELECT MIN(event_type) FROM processed_events
		UNION ALL
		SELECT (SELECT MIN(event_type) FROM processed_events WHERE event_type > t.x) FROM t WHERE t.x IS NOT NULL
	) SELECT x FROM t WHERE x IS NOT NULL LIMIT ?`, limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list event types: %w", err)
	}
	return out, nil
}
