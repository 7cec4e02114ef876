package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// EventReplay is one deliberate replay of a stored webhook event: who asked,
// when, and what the effect did that time. The event's own outcome and note
// stay those of its first delivery.
type EventReplay struct {
	ID         int64
	Provider   string
	EventID    string
	ReplayedAt time.Time
	ReplayedBy string // the audit log's actor: a user's email, or api:TOKEN-NAME
	Outcome    string
	Note       string
}

// RecordReplay adds a replay to its event's history. An event that is gone
// (pruned since the replay read it) is ErrNotFound: the foreign key refuses
// the row, and the caller's transaction, effect and all, rolls back.
func RecordReplay(tx *gorm.DB, r EventReplay) error {
	err := tx.Create(&r).Error
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return fmt.Errorf("replay of event %s/%s: %w", r.Provider, r.EventID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("record replay of event %s/%s: %w", r.Provider, r.EventID, err)
	}
	return nil
}

// EventReplays lists up to limit of an event's replays, newest first, and
// how many it has in all.
func EventReplays(db *gorm.DB, provider, eventID string, limit int) ([]EventReplay, int64, error) {
	var out []EventReplay
	err := db.Where("provider = ? AND event_id = ?", provider, eventID).Order("replayed_at DESC, id DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, 0, fmt.Errorf("replays of event %s/%s: %w", provider, eventID, err)
	}
	total := int64(len(out))
	if total < int64(limit) {
		return out, total, nil // all of them: no need to count
	}
	if err := db.Model(&EventReplay{}).Where("provider = ? AND event_id = ?", provider, eventID).Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count replays of event %s/%s: %w", provider, eventID, err)
	}
	return out, total, nil
}
