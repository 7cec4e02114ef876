package reconcile

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// fixOrder applies the safest fixes first: adoptions only change our rows,
// pushes update objects that exist, and re-creates (which add objects)
// come last, so that a safety valve stops before them if anything.
var fixOrder = []string{discrepancy.FailedButExists, discrepancy.UnlinkedRemote, discrepancy.FieldMismatch,
	discrepancy.NeverSynced, discrepancy.MissingRemote}

// fixAll applies the run's open fixes in batches, at most limit of them (a
// negative limit: all). With fixes left beyond the limit the run is marked
// to end awaiting confirmation.
func (rn *run) fixAll(ctx context.Context, limit int64) error {
	var fixed int64
	for _, kind := range fixOrder {
		for after := int64(0); ; {
			n := int64(rn.r.opts.Batch)
			if limit >= 0 {
				n = min(n, limit-fixed)
			}
			if n == 0 {
				return rn.stopAtValve(ctx)
			}
			fs, err := models.OpenFindings(rn.r.db.WithContext(ctx), rn.row.ID, kind, after, int(n))
			if err != nil || len(fs) == 0 {
				if err != nil {
					return fmt.Errorf("read fixes of run %d: %w", rn.row.ID, err)
				}
				break
			}
			applied, err := rn.applyBatch(ctx, fs)
			if err != nil {
				return err
			}
			fixed += applied
			after = fs[len(fs)-1].ID
			if err := rn.progress(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// stopAtValve ends the fixing at the safety valve: if fixes are left, the
// run waits for an operator.
func (rn *run) stopAtValve(ctx context.Context) error {
	open, err := models.CountOpen(rn.r.db.WithContext(ctx), rn.row.ID)
	if err != nil {
		return fmt.Errorf("count fixes left: %w", err)
	}
	rn.awaiting = open > 0
	if rn.awaiting {
		rn.r.log.Warn("reconciliation stopped at its safety valve", "service", rn.svc.Name, "run", rn.row.ID,
			"left", open, "max_fixes", maxFixes(rn.svc.Config.Reconcile))
	}
	return nil
}

// applyBatch applies a batch of fixes and counts them on the run, in one
// transaction: a fix and its "fixed" mark never part.
func (rn *run) applyBatch(ctx context.Context, fs []models.Finding) (int64, error) {
	fr := models.FixRun{ID: rn.row.ID, Service: rn.svc.Name, StartedAt: rn.row.StartedAt}
	var applied int64
	err := rn.r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		applied = 0
		now := rn.r.clock.Now()
		for _, f := range fs {
			ok, err := models.ApplyFix(tx, fr, f, now)
			if err != nil {
				return err
			}
			if ok {
				applied++
			}
		}
		return models.AddFixed(tx, rn.row.ID, applied)
	})
	return applied, err
}

// Confirm applies the fixes a run held back at its safety valve, on who's
// word, and returns the run as it ended. Only a service's latest run that is
// awaiting confirmation can be confirmed. The fixes change rows only (the
// outbox does the sending), so it returns in moments.
func (r *Reconciler) Confirm(ctx context.Context, runID int64, who string) (*models.ReconciliationRun, error) {
	row, err := models.RunByID(r.db.WithContext(ctx), runID)
	if err != nil {
		return nil, err
	}
	svc, ok := r.services[row.Service]
	if !ok {
		return nil, models.Invalid(fmt.Sprintf("%s is no longer configured; its run cannot be confirmed", row.Service))
	}
	if row, err = models.ResumeRun(r.db.WithContext(ctx), runID, who, r.opts.WorkerID, r.clock.Now()); err != nil {
		return nil, err
	}
	r.log.Info("reconciliation confirmed", "service", row.Service, "run", runID, "by", who)
	rn := &run{r: r, svc: svc, row: *row, o: RunOptions{TriggeredBy: row.TriggeredBy},
		expected: row.Expected, scanned: row.Scanned, listed: listedOf(row)}
	return rn.execute(ctx, func(ctx context.Context) error { return rn.fixAll(ctx, -1) })
}

// listedOf is how many objects a run's listing met, 0 when it did not say.
func listedOf(row *models.ReconciliationRun) int64 {
	if row.Listed == nil {
		return 0
	}
	return *row.Listed
}
