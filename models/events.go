package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Event outcomes.
const (
	EventApplied = "applied" // the effect ran
	EventIgnored = "ignored" // nothing to do: unknown type, or a guarded transition that had already happened
	EventFailed  = "failed"  // well-formed but can never apply; shown to an operator
)

// RecordEvent inserts an accepted webhook, ignoring a conflict on
// (provider, event_id): the primary key, not a prior SELECT, decides which
// of several concurrent deliveries is the first. It reports whether this
// call inserted the row.
func RecordEvent(tx *gorm.DB, ev ProcessedEvent) (bool, error) {
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&ev)
	if res.Error != nil {
		return false, fmt.Errorf("record event %s/%s: %w", ev.Provider, ev.EventID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// CountDuplicate notes one more delivery of an event already processed.
func CountDuplicate(tx *gorm.DB, provider, eventID string, now time.Time) error {
	return tx.Model(&ProcessedEvent{}).Where("provider = ? AND event_id = ?", provider, eventID).
		Updates(map[string]any{"duplicates": gorm.Expr("duplicates + 1"), "last_duplicate_at": now}).Error
}

// SetEventOutcome writes what applying an event did, and the link its
// effect found (nil: none).
func SetEventOutcome(tx *gorm.DB, provider, eventID, outcome, note string, linkID *int64) error {
	set := map[string]any{"outcome": outcome, "error": note}
	if linkID != nil {
		set["link_id"] = *linkID
	}
	return tx.Model(&ProcessedEvent{}).Where("provider = ? AND event_id = ?", provider, eventID).Updates(set).Error
}

// EventByID finds a processed event.
func EventByID(db *gorm.DB, provider, eventID string) (*ProcessedEvent, error) {
	var ev ProcessedEvent
	err := db.Where("provider = ? AND event_id = ?", provider, eventID).Take(&ev).Error
	return &ev, notFound(err, "event "+provider+"/"+eventID)
}

// PruneEvents deletes up to batch events received before a time.
func PruneEvents(db *gorm.DB, before time.Time, batch int) (int64, error) {
	sub := db.Model(&ProcessedEvent{}).Select("provider, event_id").Where("received_at < ?", before).Limit(batch)
	res := db.Where("(provider, event_id) IN (?)", sub).Delete(&ProcessedEvent{})
	return res.RowsAffected, res.Error
}

// LinkByExternal finds the link of a service to a provider's object: by the
// provider's id, which names one object for good, else by our external key,
// which is what a link that never learnt its object's id (a lost create
// response) can be found by. The id is asked first, and on its own: a key
// can be carried by two objects (a duplicate), and a link found by key may
// point at another object than the one the caller names — the caller
// compares the link's ExternalID before acting on it.
func LinkByExternal(tx *gorm.DB, service, externalID, externalKey string) (*Link, error) {
	var l Link
	if externalID != "" {
		err := tx.Where("external_service = ? AND external_id = ?", service, externalID).Order("id").Take(&l).Error
		if !errors.Is(err, gorm.ErrRecordNotFound) || externalKey == "" {
			return &l, notFound(err, "link of "+service+" "+externalID)
		}
	}
	if externalKey == "" {
		return nil, fmt.Errorf("link: %w", ErrNotFound)
	}
	err := tx.Where("external_service = ? AND external_key = ?", service, externalKey).Order("id").Take(&l).Error
	return &l, notFound(err, "link of "+service+" "+externalKey)
}

// LockRecord reads a record for update: on Postgres the row is locked until
// the transaction ends; on SQLite the transaction already holds the write lock.
func LockRecord(tx *gorm.DB, localType, localID string) (*Record, error) {
	var r Record
	q := tx
	if Dialect(tx) == Postgres {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	err := q.Where("local_type = ? AND local_id = ?", localType, localID).Take(&r).Error
	return &r, notFound(err, "record "+localType+"/"+localID)
}

// SetRecordPayload replaces a record's payload; it is a compare-and-set on
// the hash the caller read.
func SetRecordPayload(tx *gorm.DB, r *Record, payload, hash string, now time.Time) error {
	res := tx.Model(&Record{}).Where("id = ? AND content_hash = ?", r.ID, r.ContentHash).
		Updates(map[string]any{"payload": payload, "content_hash": hash, "updated_at": now})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("record %s/%s changed meanwhile: %w", r.LocalType, r.LocalID, ErrConflict)
	}
	return nil
}
