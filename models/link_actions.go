package models

import (
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// MarkFailed stops a link from being retried, with who and why in its
// error. A link being sent is left to its worker.
func MarkFailed(db *gorm.DB, id int64, who, reason string, now time.Time) (*Link, error) {
	l, err := LinkByID(db, id)
	if err != nil {
		return nil, err
	}
	msg := "Marked failed by " + who
	if r := strings.TrimSpace(reason); r != "" {
		msg += ": " + r
	}
	// Only a link still waiting to be sent: the status is checked in the
	// update itself, so a send that ends meanwhile is never overwritten.
	res := db.Model(&Link{}).Where("id = ? AND status IN ?", id, []Status{StatusNew, StatusRetry}).Updates(map[string]any{
		"status": StatusFailed, "last_error": msg, "error_group": ErrorGroup(l.ExternalService, 0, "marked failed by an operator"),
		"updated_at": now})
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 1 {
		return LinkByID(db, id)
	}
	if l, err = LinkByID(db, id); err != nil {
		return nil, err
	}
	switch l.Status {
	case StatusProcessing:
		return nil, Invalid("This link is being sent right now; wait for the attempt to end.")
	case StatusSuccess:
		return nil, Invalid("This link is synced: the service has the record. Mark failed is only for links still waiting to be sent.")
	case StatusFailed:
		return nil, Invalid("This link is already failed; nothing changed.")
	}
	return nil, Invalid(fmt.Sprintf("Only a link waiting to be sent can be marked failed; this one is %s.", l.Status))
}

// Recreate starts a genuinely new create for a link whose remote object was
// deleted: a new idempotency key (the old one would replay the old object),
// no external id, no lookup — an operator confirmed the object should exist.
// The object it forgets is kept as one the link gave up (a mark from before
// those were kept, or an object adopted since, has none yet): a late event
// about it must not find the link, which our key still matches, waiting for
// an id to adopt.
func Recreate(db *gorm.DB, id int64, now time.Time) (*Link, error) {
	l, err := LinkByID(db, id)
	if err != nil {
		return nil, err
	}
	if l.RemoteDeletedAt == nil {
		return nil, Invalid("only a link whose remote object was deleted can be re-created")
	}
	key := fmt.Sprintf("%s-%d", CreateKey(l.LocalType, l.LocalID), now.Unix())
	err = db.Transaction(func(tx *gorm.DB) error {
		// external_id as read: the object kept is the one forgotten.
		res := tx.Model(&Link{}).Where("id = ? AND remote_deleted_at IS NOT NULL AND status <> ? AND external_id = ?",
			id, StatusProcessing, l.ExternalID).
			Updates(map[string]any{"external_id": "", "remote_deleted_at": nil, "idempotency_key": key, "needs_lookup": false,
				"delete_unknown": false, "create_payload": "", "status": StatusNew, "attempts": 0, "next_attempt_at": now, "last_error": "",
				"error_group": "", "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("link %d changed meanwhile: %w", id, ErrConflict)
		}
		return giveUpObject(tx, id, l.ExternalID, now)
	})
	if err != nil {
		return nil, err
	}
	return LinkByID(db, id)
}
