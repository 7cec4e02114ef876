package models

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/syncdesk/syncdesk/models/discrepancy"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Discrepancy statuses.
const (
	DiscrepancyOpen     = "open"     // fixable, not fixed (yet): a dry run, or beyond the safety valve
	DiscrepancyFixed    = "fixed"    // the fix was applied
	DiscrepancyReported = "reported" // for a person: the policy says report, or no fix is safe
	// DiscrepancyResolved is a reported discrepancy a person resolved. It is
	// not stored as a status (see migration 0022): a reported row with a
	// resolution counts, and filters, as resolved.
	DiscrepancyResolved = "resolved"
)

// Run statuses.
const (
	RunRunning     = "running"
	RunCompleted   = "completed"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
	RunAwaiting    = "awaiting_confirmation" // stopped at the safety valve; an operator confirms the rest
)

// runWords is a run status as the reasons in errors say it.
var runWords = map[string]string{RunRunning: "running", RunCompleted: "completed", RunFailed: "failed",
	RunInterrupted: "interrupted", RunAwaiting: "awaiting confirmation"}

// RunWord says a run status in the words of an error's reason.
func RunWord(status string) string { return cmp.Or(runWords[status], status) }

// comparedStatuses are the statuses of runs that compared both sides to the
// end: their findings are the freshest there are.
var comparedStatuses = []string{RunCompleted, RunAwaiting}

// ErrRunActive means a reconciliation of the service is already running.
var ErrRunActive = errors.New("a reconciliation of this service is already running")

// ErrRunLost means the run is no longer running in the database: a sweep
// took it for dead and marked it interrupted.
var ErrRunLost = errors.New("the run was marked interrupted meanwhile")

// StartRun inserts r as the service's running run and sets r.ID, or returns
// ErrRunActive. The partial unique index reconciliation_runs_one_running_key
// and ON CONFLICT … DO NOTHING make this one statement that two instances
// (or a scheduled and a manual start) cannot both win.
func StartRun(db *gorm.DB, r *ReconciliationRun) error {
	r.Status = RunRunning
	res := db.Clauses(clause.OnConflict{
		Columns:     []clause.Column{{Name: "service"}},
		TargetWhere: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "status = 'running'"}}},
		DoNothing:   true,
	}).Create(r)
	switch {
	case errors.Is(res.Error, gorm.ErrDuplicatedKey):
		return fmt.Errorf("%s: %w", r.Service, ErrRunActive)
	case res.Error != nil:
		return fmt.Errorf("start run of %s: %w", r.Service, res.Error)
	case res.RowsAffected == 0:
		return fmt.Errorf("%s: %w", r.Service, ErrRunActive)
	}
	return nil
}

// RunProgress records a run's progress (listed: the objects the listing met
// so far, counted in scanned too) and heartbeat; ErrRunLost when the run is
// no longer running.
func RunProgress(db *gorm.DB, id, expected, scanned, listed int64, now time.Time) error {
	return runningUpdate(db, id, map[string]any{"expected": expected, "scanned": scanned, "listed": listed, "heartbeat_at": now})
}

// RunHeartbeat says the run's owner is alive; ErrRunLost when the run is no
// longer running.
func RunHeartbeat(db *gorm.DB, id int64, now time.Time) error {
	return runningUpdate(db, id, map[string]any{"heartbeat_at": now})
}

// FinishRun ends a running run with status and, for a failure, its error.
func FinishRun(db *gorm.DB, id int64, status, reason string, now time.Time) error {
	return runningUpdate(db, id, map[string]any{"status": status, "error": reason, "finished_at": now, "heartbeat_at": now})
}

func runningUpdate(db *gorm.DB, id int64, set map[string]any) error {
	res := db.Model(&ReconciliationRun{}).Where("id = ? AND status = ?", id, RunRunning).Updates(set)
	if res.Error != nil {
		return fmt.Errorf("update run %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("run %d: %w", id, ErrRunLost)
	}
	return nil
}

// SweepStaleRuns marks running runs whose heartbeat is older than before as
// interrupted (their instance crashed or hung), then deletes the scratch
// rows of every run that is not running. It returns how many runs it marked.
func SweepStaleRuns(db *gorm.DB, before, now time.Time) (int64, error) {
	res := db.Model(&ReconciliationRun{}).
		Where("status = ? AND COALESCE(heartbeat_at, started_at) < ?", RunRunning, before).
		Updates(map[string]any{"status": RunInterrupted, "finished_at": now,
			"error": "the instance running it stopped answering (no heartbeat); the next run starts afresh"})
	if res.Error != nil {
		return 0, fmt.Errorf("sweep stale runs: %w", res.Error)
	}
	err := db.Where("run_id IN (?)", db.Model(&ReconciliationRun{}).Select("id").Where("status <> ?", RunRunning)).
		Delete(&Seen{}).Error
	if err != nil {
		return res.RowsAffected, fmt.Errorf("clear scratch of finished runs: %w", err)
	}
	return res.RowsAffected, nil
}

// ClearSeen deletes one run's scratch rows.
func ClearSeen(db *gorm.DB, runID int64) error {
	return db.Where("run_id = ?", runID).Delete(&Seen{}).Error
}

// ResumeRun takes a run that stopped at its safety valve back to running on
// an operator's confirmation. Only the service's latest run can be
// confirmed: a newer run has seen fresher data.
func ResumeRun(db *gorm.DB, id int64, who, owner string, now time.Time) (*ReconciliationRun, error) {
	res := db.Exec(`UPDATE reconciliation_runs SET status = ?, confirmed_by = ?, confirmed_at = ?, heartbeat_at = ?, owner = ?
		WHERE id = ? AND status = ? AND (NOT dry_run OR applied_by <> '')
		AND id = (SELECT MAX(r2.id) FROM reconciliation_runs r2 WHERE r2.service = reconciliation_runs.service)`,
		RunRunning, who, now, now, owner, id, RunAwaiting)
	if errors.Is(res.Error, gorm.ErrDuplicatedKey) {
		return nil, ErrRunActive
	}
	if res.Error != nil {
		return nil, fmt.Errorf("resume run %d: %w", id, res.Error)
	}
	run, err := RunByID(db, id)
	if err != nil {
		return nil, err
	}
	if res.RowsAffected == 1 {
		return run, nil
	}
	return nil, notConfirmable(db, run)
}

// notConfirmable says, in words, why run cannot be confirmed.
func notConfirmable(db *gorm.DB, run *ReconciliationRun) error {
	if run.Status != RunAwaiting {
		return Invalid(fmt.Sprintf("Run %d is %s, not awaiting confirmation: there is nothing to confirm.", run.ID, runWords[run.Status]))
	}
	by, err := SupersededBy(db, run)
	if err != nil {
		return err
	}
	if by > 0 {
		return Invalid(fmt.Sprintf("Run %d was superseded by run %d: its findings are out of date, so its fixes were not applied. "+
			"Run %d's report shows what is wrong now.", run.ID, by, by))
	}
	newer, err := LatestRun(db, run.Service)
	if err != nil {
		return err
	}
	next := "Start a new run and look at its report instead."
	if newer.Status == RunRunning {
		next = fmt.Sprintf("Look at run %d's report when it ends instead.", newer.ID)
	}
	return Invalid(fmt.Sprintf("Run %d of %s started after run %d (it is %s): confirming run %d would apply fixes found on older data. %s",
		newer.ID, run.Service, run.ID, runWords[newer.Status], run.ID, next))
}

// SupersededBy returns the run that superseded run, or 0. A run awaiting
// confirmation is superseded once a newer run of its service has compared
// both sides to the end (completed, or stopped at its own safety valve; a
// dry run too): its findings are out of date then, and confirming it would
// apply fixes found on old data — the fixes check our links, not what the
// provider did since. ResumeRun refuses it; pages show it superseded.
// Derived, not stored: no write can miss it, and rows written before it
// existed read the same.
func SupersededBy(db *gorm.DB, run *ReconciliationRun) (int64, error) {
	if run.Status != RunAwaiting {
		return 0, nil
	}
	var ids []int64
	err := db.Model(&ReconciliationRun{}).Where("service = ? AND id > ? AND status IN ?", run.Service, run.ID, comparedStatuses).
		Order("id").Limit(1).Pluck("id", &ids).Error
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

// AddFixed counts n more fixes applied by a run.
func AddFixed(tx *gorm.DB, id, n int64) error {
	return tx.Model(&ReconciliationRun{}).Where("id = ?", id).Update("fixed", gorm.Expr("fixed + ?", n)).Error
}

// RunByID finds a run.
func RunByID(db *gorm.DB, id int64) (*ReconciliationRun, error) {
	var r ReconciliationRun
	err := db.Take(&r, id).Error
	return &r, notFound(err, fmt.Sprintf("reconciliation run %d", id))
}

// LatestRun returns a service's newest run, or ErrNotFound.
func LatestRun(db *gorm.DB, service string) (*ReconciliationRun, error) {
	var r ReconciliationRun
	err := db.Where("service = ?", service).Order("id DESC").Take(&r).Error
	return &r, notFound(err, "reconciliation run of "+service)
}

// RunFilter narrows a list of runs; empty fields match everything.
type RunFilter struct {
	Service  string
	BeforeID int64 // keyset cursor: runs with a smaller id
	Limit    int   // default 50, at most 500
}

// ListRuns returns runs newest first.
func ListRuns(db *gorm.DB, f RunFilter) ([]ReconciliationRun, error) {
	q := db.Model(&ReconciliationRun{})
	if f.Service != "" {
		q = q.Where("service = ?", f.Service)
	}
	if f.BeforeID > 0 {
		q = q.Where("id < ?", f.BeforeID)
	}
	var out []ReconciliationRun
	return out, q.Order("id DESC").Limit(limitOr(f.Limit, 50)).Find(&out).Error
}

// KindCount is how many discrepancies of one kind a run has, per status.
type KindCount struct {
	Kind                  string
	Open, Fixed, Reported int64
	Resolved              int64 // reported, then resolved by a person
	Total                 int64
}

// RunDetail is a run with its discrepancy counts.
type RunDetail struct {
	Run   ReconciliationRun
	Kinds []KindCount // one per kind, in discrepancy.Kinds order, zeros included
	All   KindCount   // the totals (Kind "")
	// SupersededBy is the newer run that made this one's findings out of
	// date while it awaited confirmation (see SupersededBy); 0 if none.
	SupersededBy int64
}

// RunDetailByID returns a run with its counts per kind and status.
func RunDetailByID(db *gorm.DB, id int64) (*RunDetail, error) {
	run, err := RunByID(db, id)
	if err != nil {
		return nil, err
	}
	return RunDetailOf(db, run)
}

// RunDetailOf adds to a run already read its counts per kind and status.
func RunDetailOf(db *gorm.DB, run *ReconciliationRun) (*RunDetail, error) {
	ds, err := RunDetails(db, []ReconciliationRun{*run})
	if err != nil {
		return nil, err
	}
	return &ds[0], nil
}

// RunDetails adds to runs already read their counts per kind and status, in
// one query for all of them (a page of runs is one list and one count), and
// for each awaiting confirmation the run that superseded it.
func RunDetails(db *gorm.DB, runs []ReconciliationRun) ([]RunDetail, error) {
	out := make([]RunDetail, len(runs))
	at := make(map[int64]int, len(runs))
	ids := make([]int64, len(runs))
	for i, r := range runs {
		out[i] = RunDetail{Run: r}
		for _, k := range discrepancy.Kinds {
			out[i].Kinds = append(out[i].Kinds, KindCount{Kind: k})
		}
		at[r.ID], ids[i] = i, r.ID
	}
	if len(runs) == 0 {
		return out, nil
	}
	var rows []struct {
		RunID        int64
		Kind, Status string
		N            int64
	}
	if err := db.Model(&Discrepancy{}).Select("run_id, kind, "+statusOrResolved+" AS status, COUNT(*) AS n").Where("run_id IN ?", ids).
		Group("run_id, kind, " + statusOrResolved).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count discrepancies of %d runs: %w", len(ids), err)
	}
	for _, r := range rows {
		d := &out[at[r.RunID]]
		if k := slices.Index(discrepancy.Kinds, r.Kind); k >= 0 {
			d.Kinds[k].add(r.Status, r.N)
		}
		d.All.add(r.Status, r.N)
	}
	for i := range out {
		var err error
		if out[i].SupersededBy, err = SupersededBy(db, &out[i].Run); err != nil {
			return nil, fmt.Errorf("is run %d superseded: %w", out[i].Run.ID, err)
		}
	}
	return out, nil
}

// statusOrResolved is a discrepancy's status as pages count it.
const statusOrResolved = "CASE WHEN resolution <> '' THEN 'resolved' ELSE status END"

func (c *KindCount) add(status string, n int64) {
	switch status {
	case DiscrepancyResolved:
		c.Resolved += n
	case DiscrepancyOpen:
		c.Open += n
	case DiscrepancyFixed:
		c.Fixed += n
	case DiscrepancyReported:
		c.Reported += n
	}
	c.Total += n
}

// DiscrepancyFilter narrows a run's discrepancies; empty fields match everything.
type DiscrepancyFilter struct {
	RunID   int64
	Kind    string
	Status  string
	AfterID int64 // keyset cursor: discrepancies with a larger id
	Limit   int   // default 100, at most 500
}

// ListDiscrepancies returns a run's discrepancies in the order found (by id).
func ListDiscrepancies(db *gorm.DB, f DiscrepancyFilter) ([]Discrepancy, error) {
	q := db.Model(&Discrepancy{}).Where("run_id = ? AND id > ?", f.RunID, f.AfterID)
	if f.Kind != "" {
		q = q.Where("kind = ?", f.Kind)
	}
	switch f.Status {
	case "":
	case DiscrepancyResolved:
		q = q.Where("status = ? AND resolution <> ''", DiscrepancyReported)
	case DiscrepancyReported:
		q = q.Where("status = ? AND resolution = ''", DiscrepancyReported)
	default:
		q = q.Where("status = ?", f.Status)
	}
	var out []Discrepancy
	return out, q.Order("id").Limit(limitOr(f.Limit, 100)).Find(&out).Error
}

func limitOr(n, def int) int {
	if n <= 0 || n > 500 {
		return def
	}
	return n
}
