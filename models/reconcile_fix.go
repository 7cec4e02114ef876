package models

import (
	"errors"
	"fmt"
	"time"

	"github.com/syncdesk/syncdesk/models/discrepancy"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// OpenFindings returns up to limit open discrepancies of one kind of a run,
// by id after afterID: the fixes still to apply.
func OpenFindings(db *gorm.DB, runID int64, kind string, afterID int64, limit int) ([]Finding, error) {
	var out []Finding
	err := db.Where("run_id = ? AND kind = ? AND status = ? AND id > ?", runID, kind, DiscrepancyOpen, afterID).
		Order("id").Limit(limit).Find(&out).Error
	return out, err
}

// FixRun is what a fix needs to know of its run.
type FixRun struct {
	ID        int64
	Service   string
	StartedAt time.Time // links changed since are left alone: the run's view of them is stale
}

// ApplyFix applies one discrepancy's fix inside tx and marks it fixed, or,
// when the link changed since the run looked, marks it reported with the
// reason. It reports whether the fix was applied.
//
// Every fix only changes our own rows, the way the outbox itself would:
// adopting sets the link's external id and status; re-pushing and
// enqueueing make a link due (status new) so that the outbox sends it under
// its lease, idempotency key and attempt log; a re-create is a genuinely new
// create with a new idempotency key. Each is a compare-and-set on the link's
// status, external id and updated_at, so a fix never overrides what the
// outbox, an operator or a webhook did after the run looked.
func ApplyFix(tx *gorm.DB, run FixRun, f Finding, now time.Time) (bool, error) {
	var applied bool
	var err error
	switch {
	case f.Kind == discrepancy.MissingRemote && f.LinkID != nil:
		applied, err = recreateLink(tx, run, f, now)
	case f.Kind == discrepancy.FieldMismatch && f.LinkID != nil:
		applied, err = requeueLink(tx, run, f, now)
	case f.Kind == discrepancy.FailedButExists && f.LinkID != nil:
		applied, err = adoptLink(tx, run, f, StatusFailed, now)
	case f.Kind == discrepancy.UnlinkedRemote && f.LinkID != nil:
		applied, err = adoptLink(tx, run, f, StatusSuccess, now)
	case f.Kind == discrepancy.UnlinkedRemote, f.Kind == discrepancy.NeverSynced:
		applied, err = insertLink(tx, run, f, now)
	default:
		return false, fmt.Errorf("discrepancy %d: no fix for %s", f.ID, f.Kind)
	}
	if errors.Is(err, ErrNotFound) {
		applied, err = false, nil // the record went away: nothing to adopt
	}
	if err != nil {
		return false, fmt.Errorf("fix discrepancy %d (%s): %w", f.ID, f.Kind, err)
	}
	return applied, markFinding(tx, f.ID, applied)
}

func markFinding(tx *gorm.DB, id int64, applied bool) error {
	set := map[string]any{"status": DiscrepancyFixed}
	if !applied {
		set = map[string]any{"status": DiscrepancyReported,
			"detail": gorm.Expr("detail || ?", " Not fixed: the link or record changed after the run looked; the next run sees it afresh.")}
	}
	return tx.Model(&Finding{}).Where("id = ?", id).Updates(set).Error
}

// unchanged is the compare-and-set every fix of an existing link starts from.
func unchanged(tx *gorm.DB, run FixRun, f Finding, status Status) *gorm.DB {
	return tx.Model(&Link{}).Where("id = ? AND status = ? AND external_id = ? AND updated_at < ?",
		*f.LinkID, status, f.LinkExternalID, run.StartedAt)
}

// recreateLink queues a new create for a link whose object the listing did
// not return: a new idempotency key (the old one would replay the old
// object) and no external id — but a lookup by key first, because a listing
// can miss an object that exists (an offset page that shifted while it was
// read, a list that leaves archived objects out): a found object is
// adopted, never doubled. A link the provider said was deleted is never
// here: re-creating that one is an operator's decision.
//
// The object forgotten is kept as one the link gave up: until the lookup
// or the create names the link's object, a late event about the old one,
// which carries our key, would otherwise find the link with no id and be
// applied to it (adopted, or marked deleted and re-created again). Should
// the lookup find that very object after all, the link points at it again,
// and events about it apply again (see DeletedObject's callers).
func recreateLink(tx *gorm.DB, run FixRun, f Finding, now time.Time) (bool, error) {
	key := fmt.Sprintf("%s-%d-r%d", CreateKey(f.LocalType, f.LocalID), now.Unix(), run.ID)
	res := unchanged(tx, run, f, StatusSuccess).Where("remote_deleted_at IS NULL").Updates(map[string]any{
		"external_id": "", "idempotency_key": key, "needs_lookup": true, "delete_unknown": false, "create_payload": "", "pushed_hash": "",
		"status": StatusNew, "attempts": 0, "next_attempt_at": now, "last_error": "", "error_group": "", "updated_at": now})
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	return true, giveUpObject(tx, *f.LinkID, f.LinkExternalID, now)
}

// requeueLink makes a successful link due again, so that the outbox pushes
// the record's desired state over the object.
func requeueLink(tx *gorm.DB, run FixRun, f Finding, now time.Time) (bool, error) {
	res := unchanged(tx, run, f, StatusSuccess).Updates(map[string]any{
		"status": StatusNew, "attempts": 0, "next_attempt_at": now, "updated_at": now})
	return res.RowsAffected == 1, res.Error
}

// adoptLink points a link at the object the run found under its key. It
// ends success when that object already holds the record's current content
// (RecordHash), and new otherwise, so that the outbox pushes the update. An
// attempt row says why the link changed without a call.
func adoptLink(tx *gorm.DB, run FixRun, f Finding, from Status, now time.Time) (bool, error) {
	// A deleted record's link is adopted too: the object it then names is
	// the one its queued delete removes (the tombstone moved the link on,
	// so a link the run saw before the delete fails the compare-and-set).
	status, err := adoptedStatus(tx, f, true)
	if err != nil {
		return false, err
	}
	var attempts int
	if err := tx.Model(&Link{}).Select("attempts").Where("id = ?", *f.LinkID).Scan(&attempts).Error; err != nil {
		return false, err
	}
	res := unchanged(tx, run, f, from).Updates(map[string]any{
		"external_id": f.ExternalIDs, "status": status, "pushed_hash": f.RecordHash, "needs_lookup": false, "delete_unknown": false,
		"create_payload": "", "attempts": 0, "next_attempt_at": now, "last_error": "", "last_http_code": 0,
		"error_group": "", "updated_at": now})
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	return true, logAdoption(tx, run, f, *f.LinkID, attempts+1, now)
}

// insertLink gives a record with no link for the service one: pointing at
// the object found under its key (an adoption), or new (never synced, so the
// outbox creates it). ON CONFLICT DO NOTHING: a link made meanwhile, by an
// upsert or another instance, wins.
func insertLink(tx *gorm.DB, run FixRun, f Finding, now time.Time) (bool, error) {
	status, err := adoptedStatus(tx, f, false) // also: is the record still there, and live?
	if err != nil {
		return false, err
	}
	l := Link{LocalType: f.LocalType, LocalID: f.LocalID, ExternalService: run.Service, ExternalKey: f.ExternalKey,
		ExternalID: f.ExternalIDs, Status: status, NextAttemptAt: now, PushedHash: f.RecordHash,
		IdempotencyKey: CreateKey(f.LocalType, f.LocalID), CreatedAt: now, UpdatedAt: now}
	if f.Kind == discrepancy.NeverSynced {
		l.ExternalID, l.PushedHash, l.Status = "", "", StatusNew
	}
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&l)
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	if f.Kind == discrepancy.UnlinkedRemote {
		return true, logAdoption(tx, run, f, l.ID, 1, now)
	}
	return true, nil
}

// adoptedStatus is success when the record still has the content the
// remote object was found to hold, new otherwise; ErrNotFound when the
// record is gone, or deleted unless deleted says it may be. A new link for
// a deleted record would adopt its object in success, which nothing then
// sends again (its delete is queued only for the links it had), or create
// what the record no longer wants.
func adoptedStatus(tx *gorm.DB, f Finding, deleted bool) (Status, error) {
	var hashes []string
	q := tx.Model(&Record{}).Where("local_type = ? AND local_id = ?", f.LocalType, f.LocalID)
	if !deleted {
		q = q.Where("deleted_at IS NULL")
	}
	err := q.Limit(1).Pluck("content_hash", &hashes).Error
	if err != nil {
		return "", err
	}
	if len(hashes) == 0 {
		return "", fmt.Errorf("record %s/%s: %w", f.LocalType, f.LocalID, ErrNotFound)
	}
	if f.RecordHash != "" && f.RecordHash == hashes[0] {
		return StatusSuccess, nil
	}
	return StatusNew, nil
}

func logAdoption(tx *gorm.DB, run FixRun, f Finding, linkID int64, number int, now time.Time) error {
	return tx.Create(&Attempt{LinkID: linkID, Number: number, Operation: "reconcile.adopt", Outcome: OutcomeOK,
		ExternalID: f.ExternalIDs, Worker: fmt.Sprintf("reconciliation run %d", run.ID), CreatedAt: now,
		RequestExcerpt: fmt.Sprintf("no call: reconciliation run %d found %s carrying the key %s and adopted it",
			run.ID, f.ExternalIDs, f.ExternalKey)}).Error
}

// CountOpen counts a run's open discrepancies: the fixes not applied yet.
func CountOpen(db *gorm.DB, runID int64) (int64, error) {
	var n int64
	return n, db.Model(&Finding{}).Where("run_id = ? AND status = ?", runID, DiscrepancyOpen).Count(&n).Error
}
