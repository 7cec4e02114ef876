package models

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// What a person did with a discrepancy waiting for one.
const (
	ResolvedLinked    = "linked"    // an unlinked object was linked to a record
	ResolvedKept      = "kept"      // one object of a duplicate was kept and linked; the others are to delete at the provider
	ResolvedDismissed = "dismissed" // nothing to do, with a reason
)

// FieldDifference is one field in which the provider's object differs from
// our record: its value here and there, as text.
type FieldDifference struct {
	Field string `json:"field"`
	Here  string `json:"here"`
	There string `json:"there"`
}

// Resolution is a person's decision on one discrepancy waiting for one.
type Resolution struct {
	DiscrepancyID int64
	Action        string // ResolvedLinked, ResolvedKept or ResolvedDismissed
	// For linked and kept: the record to link, its key at the service
	// (what a new link is created with) and the object to link it to.
	LocalType, LocalID string
	ExternalKey        string
	ExternalID         string
	Reason             string // dismissed: why; required
	By                 string
	Now                time.Time
}

// Resolved is what Resolve did: the discrepancy as it ends, its run, and
// the link it pointed at the object (nil for a dismissal).
type Resolved struct {
	Discrepancy Discrepancy
	Run         ReconciliationRun
	Link        *Link
	// ToDelete are the other objects of a duplicate, left at the provider:
	// syncdesk does not delete them, a person does.
	ToDelete []string
	// Replaced is the object the record's link pointed at before, now
	// linked to nothing here: said in words, never dropped in silence.
	Replaced string
}

// ResolveDiscrepancy applies a person's decision in one transaction. Linking
// points the record's link for the run's service at the object (made if
// the record has none) and queues it, so that the next send is an update
// of that object carrying the record, never a create; an attempt row says
// who did it and why, without a call. It refuses, in words, a discrepancy
// that is not waiting for a person (or was resolved meanwhile), an object
// the discrepancy does not name, a record that does not exist, an object
// another record's link already points at, and a link being sent.
func ResolveDiscrepancy(db *gorm.DB, r Resolution) (*Resolved, error) {
	out := &Resolved{}
	err := db.Transaction(func(tx *gorm.DB) error {
		d := &out.Discrepancy
		if err := tx.Take(d, r.DiscrepancyID).Error; err != nil {
			return notFound(err, fmt.Sprintf("discrepancy %d", r.DiscrepancyID))
		}
		if err := tx.Take(&out.Run, d.RunID).Error; err != nil {
			return notFound(err, fmt.Sprintf("reconciliation run %d", d.RunID))
		}
		if err := resolvable(d, r); err != nil {
			return err
		}
		note := strings.TrimSpace(r.Reason)
		if r.Action != ResolvedDismissed {
			link, replaced, err := pointLink(tx, out.Run, d, r)
			if err != nil {
				return err
			}
			out.Link, out.Replaced = link, replaced
			ids := SplitIDs(d.ExternalIDs)
			out.ToDelete = slices.DeleteFunc(ids, func(id string) bool { return id == r.ExternalID })
			note = resolutionNote(out.Run.Service, r, out.ToDelete, replaced)
		}
		set := map[string]any{"resolution": r.Action, "resolution_note": note, "resolved_by": r.By, "resolved_at": r.Now}
		if out.Link != nil {
			set["link_id"] = out.Link.ID
		}
		res := tx.Model(&Discrepancy{}).Where("id = ? AND status = ? AND resolution = ''", d.ID, DiscrepancyReported).Updates(set)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return Invalid("Someone resolved this discrepancy meanwhile; reload the page to see how.")
		}
		return tx.Take(d, d.ID).Error
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// resolvable says why d cannot take r, or nil.
func resolvable(d *Discrepancy, r Resolution) error {
	switch {
	case d.Resolution != "":
		return Invalid(fmt.Sprintf("This discrepancy was already %s by %s.", d.Resolution, d.ResolvedBy))
	case d.Status != DiscrepancyReported:
		return Invalid("This discrepancy is not waiting for a person: only those are linked, kept or dismissed here.")
	}
	switch r.Action {
	case ResolvedDismissed:
		if strings.TrimSpace(r.Reason) == "" {
			return Invalid("Say why it is dismissed: the reason is kept with it and in the audit log.")
		}
		return nil
	case ResolvedLinked:
		if d.Kind != discrepancy.UnlinkedRemote {
			return Invalid("Only an object that is not linked here can be linked to a record.")
		}
	case ResolvedKept:
		if d.Kind != discrepancy.DuplicateRemote {
			return Invalid("Only a duplicated object has one to keep.")
		}
	default:
		return Invalid(fmt.Sprintf("%q is not something a person does with a discrepancy: link, keep or dismiss.", r.Action))
	}
	if !slices.Contains(SplitIDs(d.ExternalIDs), r.ExternalID) {
		return Invalid(fmt.Sprintf("%s is not one of the objects this discrepancy names (%s).", r.ExternalID, strings.ReplaceAll(d.ExternalIDs, ",", ", ")))
	}
	if r.LocalType == "" || r.LocalID == "" {
		return Invalid("Name the record to link the object to: its type and id.")
	}
	return nil
}

// pointLink points the record's link for the run's service at the object,
// and says which object it pointed at before, if another.
func pointLink(tx *gorm.DB, run ReconciliationRun, d *Discrepancy, r Resolution) (*Link, string, error) {
	l, err := pointLinkAt(tx, run, r)
	if err != nil {
		return nil, "", err
	}
	replaced := l.replaced
	if replaced == r.ExternalID {
		replaced = ""
	}
	return &l.Link, replaced, logResolution(tx, run, d, r, l.ID, l.Attempts+1, replaced)
}

// pointed is a link as pointLinkAt left it, and the object it pointed at.
type pointed struct {
	Link
	replaced string
}

func pointLinkAt(tx *gorm.DB, run ReconciliationRun, r Resolution) (pointed, error) {
	var n int64
	if err := tx.Model(&Record{}).Where("local_type = ? AND local_id = ?", r.LocalType, r.LocalID).Count(&n).Error; err != nil {
		return pointed{}, err
	}
	if n == 0 {
		return pointed{}, Invalid(fmt.Sprintf("There is no record %s/%s to link the object to.", r.LocalType, r.LocalID))
	}
	var other Link
	err := tx.Where("external_service = ? AND external_id = ?", run.Service, r.ExternalID).Take(&other).Error
	switch {
	case err == nil && (other.LocalType != r.LocalType || other.LocalID != r.LocalID):
		return pointed{}, Invalid(fmt.Sprintf("%s is already linked to %s/%s (link %d): unlink that one first, or choose another record.",
			r.ExternalID, other.LocalType, other.LocalID, other.ID))
	case err != nil && !errors.Is(err, gorm.ErrRecordNotFound):
		return pointed{}, err
	}
	var l Link
	err = tx.Where("local_type = ? AND local_id = ? AND external_service = ?", r.LocalType, r.LocalID, run.Service).Take(&l).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		l = Link{LocalType: r.LocalType, LocalID: r.LocalID, ExternalService: run.Service, ExternalKey: r.ExternalKey,
			ExternalID: r.ExternalID, Status: StatusNew, NextAttemptAt: r.Now, IdempotencyKey: CreateKey(r.LocalType, r.LocalID),
			CreatedAt: r.Now, UpdatedAt: r.Now}
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&l)
		if res.Error != nil {
			return pointed{}, res.Error
		}
		if res.RowsAffected == 0 {
			return pointed{}, Invalid(fmt.Sprintf("A link of %s/%s to %s was made meanwhile; reload the page and try again.", r.LocalType, r.LocalID, run.Service))
		}
		return pointed{Link: l}, nil // a new link's attempt is its first
	}
	if err != nil {
		return pointed{}, err
	}
	if l.Status == StatusProcessing {
		return pointed{}, Invalid(fmt.Sprintf("Link %d is being sent right now; try again in a moment.", l.ID))
	}
	// A compare-and-set on what was just read: the outbox may claim it
	// between the read and the write.
	res := tx.Model(&Link{}).Where("id = ? AND status = ? AND updated_at = ?", l.ID, l.Status, l.UpdatedAt).Updates(map[string]any{
		"external_id": r.ExternalID, "status": StatusNew, "attempts": 0, "next_attempt_at": r.Now, "needs_lookup": false, "delete_unknown": false,
		"create_payload": "", "pushed_hash": "", "last_error": "", "last_http_code": 0, "error_group": "",
		"remote_deleted_at": nil, "updated_at": r.Now})
	if res.Error != nil {
		return pointed{}, res.Error
	}
	if res.RowsAffected == 0 {
		return pointed{}, Invalid(fmt.Sprintf("Link %d changed meanwhile (it is being sent?); reload the page and try again.", l.ID))
	}
	replaced := l.ExternalID
	if err := tx.Take(&l, l.ID).Error; err != nil {
		return pointed{}, err
	}
	return pointed{Link: l, replaced: replaced}, nil
}

func resolutionNote(service string, r Resolution, toDelete []string, replaced string) string {
	note := fmt.Sprintf("Linked %s/%s to %s.", r.LocalType, r.LocalID, r.ExternalID)
	if replaced != "" {
		note += fmt.Sprintf(" It was linked to %s, which stays at %s linked to nothing here: delete it there if it is a duplicate.", replaced, service)
	}
	if len(toDelete) > 0 {
		note += fmt.Sprintf(" Delete %s at %s: syncdesk does not delete objects, a person does.", strings.Join(toDelete, ", "), service)
	}
	return note
}

// logResolution writes the attempt row that says, on the link's timeline,
// why the link changed without a call.
func logResolution(tx *gorm.DB, run ReconciliationRun, d *Discrepancy, r Resolution, linkID int64, number int, replaced string) error {
	op, why := "reconcile.link", "an object not linked here"
	if r.Action == ResolvedKept {
		op, why = "reconcile.keep", "the one to keep of "+strings.ReplaceAll(d.ExternalIDs, ",", ", ")
	}
	if replaced != "" {
		why += "; it was linked to " + replaced + " before"
	}
	return tx.Create(&Attempt{LinkID: linkID, Number: number, Operation: op, Outcome: OutcomeOK,
		ExternalID: r.ExternalID, Worker: r.By, CreatedAt: r.Now,
		RequestExcerpt: fmt.Sprintf("no call: %s linked it to %s (%s), resolving discrepancy %d of reconciliation run %d; the record is sent to it as an update",
			r.By, r.ExternalID, why, d.ID, run.ID)}).Error
}

// SplitIDs splits a comma-separated list of remote ids.
func SplitIDs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// StartApply takes a completed dry run back to running so that its open
// fixes are applied, on who's word. As with a confirmation, only the
// service's latest run qualifies: a newer run has seen fresher data. A dry
// run is applied once; ErrRunActive when another run of the service is going.
func StartApply(db *gorm.DB, id int64, who, owner string, now time.Time) (*ReconciliationRun, error) {
	res := db.Exec(`UPDATE reconciliation_runs SET status = ?, applied_by = ?, applied_at = ?, heartbeat_at = ?, owner = ?
		WHERE id = ? AND status = ? AND dry_run AND applied_by = ''
		AND id = (SELECT MAX(r2.id) FROM reconciliation_runs r2 WHERE r2.service = reconciliation_runs.service)`,
		RunRunning, who, now, now, owner, id, RunCompleted)
	if errors.Is(res.Error, gorm.ErrDuplicatedKey) {
		return nil, ErrRunActive
	}
	if res.Error != nil {
		return nil, fmt.Errorf("apply dry run %d: %w", id, res.Error)
	}
	run, err := RunByID(db, id)
	if err != nil {
		return nil, err
	}
	if res.RowsAffected == 1 {
		return run, nil
	}
	return nil, notAppliable(db, run)
}

// notAppliable says, in words, why a dry run's fixes cannot be applied.
func notAppliable(db *gorm.DB, run *ReconciliationRun) error {
	switch {
	case !run.DryRun:
		return Invalid(fmt.Sprintf("Run %d is not a dry run: it applied its fixes itself.", run.ID))
	case run.AppliedBy != "":
		return Invalid(fmt.Sprintf("Run %d's fixes were already applied by %s.", run.ID, run.AppliedBy))
	case run.Status != RunCompleted:
		return Invalid(fmt.Sprintf("Run %d is %s: only a dry run that completed has fixes to apply.", run.ID, RunWord(run.Status)))
	}
	newer, err := LatestRun(db, run.Service)
	if err != nil {
		return err
	}
	return Invalid(fmt.Sprintf("Run %d of %s started after dry run %d: applying this one would apply fixes found on older data. Look at run %d's report instead.",
		newer.ID, run.Service, run.ID, newer.ID))
}

// DiscrepancyByID finds a discrepancy.
func DiscrepancyByID(db *gorm.DB, id int64) (*Discrepancy, error) {
	var d Discrepancy
	err := db.Take(&d, id).Error
	return &d, notFound(err, fmt.Sprintf("discrepancy %d", id))
}
