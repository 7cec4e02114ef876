package models

import (
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The writes of the inbox's webhook effects. Each runs in the inbox's
// transaction, after the effect read the link without a lock: the outbox
// may claim the link in between, so every update carries its own guard on
// the status, and a link being sent is never written under its worker (its
// compare-and-set on a processing link would find none, and its outcome —
// a create's new id with it — would be lost).

// RequeueSyncedLink queues a push of a link's desired state, for a webhook
// that says the provider holds something else. Only a link still in
// success: one claimed by the outbox since it was read is being sent, and
// one queued, retrying or failed meanwhile keeps its turn and its attempts.
func RequeueSyncedLink(tx *gorm.DB, id int64, now time.Time) error {
	return tx.Model(&Link{}).Where("id = ? AND status = ?", id, StatusSuccess).
		Updates(map[string]any{"status": StatusNew, "next_attempt_at": now, "updated_at": now}).Error
}

// MarkRemoteDeleted marks a link failed because its provider says the
// object is gone, with reason as its error, until an operator re-creates
// it, and keeps the deleted object's id (object, "" when the event named
// none) as one the link gave up (see DeletedObject). It reports false, and
// writes nothing, when the link is being sent: never overwrites a link
// under its worker.
func MarkRemoteDeleted(tx *gorm.DB, id int64, service, object, reason string, now time.Time) (bool, error) {
	res := tx.Model(&Link{}).Where("id = ? AND status <> ?", id, StatusProcessing).Updates(map[string]any{
		"remote_deleted_at": now, "status": StatusFailed, "last_error": reason, "last_http_code": 0, "updated_at": now,
		"error_group": ErrorGroup(service, 0, "deleted remotely: re-create after confirming")})
	if res.Error != nil || res.RowsAffected == 0 {
		return res.RowsAffected > 0, res.Error
	}
	err := giveUpObject(tx, id, object, now)
	return err == nil, err
}

// giveUpObject keeps object ("" for none: nothing to keep) as one link id
// gave up, in the caller's transaction with the write that gave it up: the
// provider reported it deleted or said it is not there, or a delete of
// ours removed it, and the link forgot it, to create a new one. Every path
// that re-creates a link's object calls it, so that a late event about the
// old object is told from one about the new (see DeletedObject). DO NOTHING: the same object given up
// again (restored, adopted again, deleted again) is the same fact, kept
// from its first report.
func giveUpObject(tx *gorm.DB, id int64, object string, now time.Time) error {
	if object == "" {
		return nil
	}
	err := tx.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&RemoteDeletedObject{LinkID: id, ExternalID: object, ReportedAt: now}).Error
	if err != nil {
		return fmt.Errorf("keep %s as an object link %d gave up: %w", object, id, err)
	}
	return nil
}

// RemoteDeletedObject is an object a link gave up, kept with the link: its
// provider reported it deleted or missing (or we deleted it), and the link,
// re-created, points at another object, while an event about this one still
// carries our key.
type RemoteDeletedObject struct {
	LinkID     int64  `gorm:"primaryKey;autoIncrement:false"`
	ExternalID string `gorm:"primaryKey"`
	ReportedAt time.Time
}

// DeletedObject reports whether link id gave up the object externalID (see
// giveUpObject): an event about it is about an object the link gave up, not
// the one it points at now.
func DeletedObject(tx *gorm.DB, id int64, externalID string) (bool, error) {
	var n int64
	err := tx.Model(&RemoteDeletedObject{}).Where("link_id = ? AND external_id = ?", id, externalID).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("read the objects link %d gave up: %w", id, err)
	}
	return n > 0, nil
}

// AdoptRemoteObject stores an object a provider told us of and we have never
// seen as the record localType/localID, linked in success to the provider's
// id, which is also its key. It reports whether the record is new. ON
// CONFLICT DO NOTHING on the unique keys of records and links, not a prior
// SELECT, makes a second delivery, a replay or a concurrent one a no-op:
// never a second record, and an existing one or its link is never
// overwritten.
func AdoptRemoteObject(tx *gorm.DB, localType, localID, service, payload, hash string, now time.Time) (bool, error) {
	rec := Record{LocalType: localType, LocalID: localID, Payload: payload, ContentHash: hash, CreatedAt: now, UpdatedAt: now}
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rec)
	if res.Error != nil {
		return false, res.Error
	}
	link := Link{LocalType: localType, LocalID: localID, ExternalService: service, ExternalKey: localID, ExternalID: localID,
		Status: StatusSuccess, NextAttemptAt: now, PushedHash: hash, CreatedAt: now, UpdatedAt: now}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&link).Error; err != nil {
		return false, err
	}
	return res.RowsAffected > 0, nil
}

// AdoptProviderState writes on a link what a webhook about its object says
// the provider holds, after the record moved to the event's state
// (recordHash). A link that had no id (its create's answer was lost) takes
// the event's externalID, and heldHash, the hash of what the provider
// holds: its create's body in the event's state. Not the record: it may
// have changed while the link waited to retry, and such a change is pushed
// now, as an update; the link is in success only when the two are the
// same. A link in success held the record's previous state, and moved it
// as we did: it takes recordHash. A link being sent is left to its worker.
func AdoptProviderState(tx *gorm.DB, l *Link, externalID, heldHash, recordHash string, now time.Time) error {
	updates := map[string]any{"updated_at": now}
	switch {
	case l.ExternalID == "" && externalID != "":
		updates["external_id"], updates["needs_lookup"], updates["create_payload"] = externalID, false, ""
		// The object adopted is the one a create of ours made. A delete of
		// ours whose outcome was unknown was of an earlier object: should
		// this one go missing, somebody else deleted it (Link.DeleteUnknown).
		updates["delete_unknown"] = false
		updates["pushed_hash"], updates["last_error"], updates["attempts"] = heldHash, "", 0
		updates["status"], updates["next_attempt_at"] = StatusNew, now
		if heldHash == recordHash {
			updates["status"] = StatusSuccess
		}
	case l.Status == StatusSuccess:
		updates["pushed_hash"] = recordHash
	}
	return tx.Model(&Link{}).Where("id = ? AND status <> ?", l.ID, StatusProcessing).Updates(updates).Error
}

// RecordMovedByProvider writes what a webhook that moved a record to the
// state its provider holds (recordHash) leaves to the links: the provider's
// link learns it (AdoptProviderState), and every other service is owed the
// record's new state (RequeueOtherLinks), unless the record had no other
// link when read. Its lock on the record keeps that so: a link created
// since is queued, and its send's finish, which waits for that lock, sees
// the record's new state.
func RecordMovedByProvider(tx *gorm.DB, lr LinkedRecord, externalID, heldHash, recordHash string, now time.Time) error {
	if lr.Record != nil && lr.Record.DeletedAt != nil {
		// What the record wants is its object gone: whatever the provider
		// holds is not that, and a link that adopts an id now must still
		// send the delete.
		heldHash = ""
	}
	if err := AdoptProviderState(tx, lr.Link, externalID, heldHash, recordHash, now); err != nil || lr.Alone {
		return err
	}
	return RequeueOtherLinks(tx, lr.Link.LocalType, lr.Link.LocalID, lr.Link.ExternalService, now)
}

// RequeueOtherLinks queues, with fresh attempts, a push of a record's new
// state to every service it is linked to but except, whose webhook changed
// it. Only links in success or failed: one new or retrying is already
// queued and keeps its attempts, and one being sent is left to its worker.
func RequeueOtherLinks(tx *gorm.DB, localType, localID, except string, now time.Time) error {
	return tx.Model(&Link{}).Where("local_type = ? AND local_id = ? AND external_service <> ? AND status IN ?",
		localType, localID, except, []Status{StatusSuccess, StatusFailed}).
		Updates(map[string]any{"status": StatusNew, "next_attempt_at": now, "attempts": 0, "updated_at": now}).Error
}
