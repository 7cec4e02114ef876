package models

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// exportBatch is how many discrepancies EachDiscrepancyBatch reads per query.
const exportBatch = 500

// EachDiscrepancyBatch calls fn with the discrepancies matching f (f.AfterID
// and f.Limit are ignored) in id order, a batch at a time, so that an export
// of a run of any size streams in bounded memory. It stops at fn's first
// error and returns it.
func EachDiscrepancyBatch(ctx context.Context, db *gorm.DB, f DiscrepancyFilter, fn func([]Discrepancy) error) error {
	f.AfterID, f.Limit = 0, exportBatch
	for {
		batch, err := ListDiscrepancies(db.WithContext(ctx), f)
		if err != nil {
			return fmt.Errorf("export discrepancies of run %d: %w", f.RunID, err)
		}
		if err := fn(batch); err != nil || len(batch) < exportBatch {
			return err
		}
		f.AfterID = batch[len(batch)-1].ID
	}
}
