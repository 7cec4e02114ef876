package models

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// A time-bucketed aggregate (attempts per hour, calls per minute) is kept by
// counting each bucket once it can no longer change. These two helpers are
// what every such aggregate shares.

// bucketsToCount lists the buckets of size from first to the one holding now
// that need counting: those not counted yet, and the current and the
// previous one again, whose rows may still be being written. model's table
// keeps its buckets' starts in column.
func bucketsToCount(db *gorm.DB, model any, column string, first, now time.Time, size time.Duration) ([]time.Time, error) {
	current := now.UTC().Truncate(size)
	var have []time.Time
	if err := db.Model(model).Distinct(column).Where(column+" >= ?", first).Pluck(column, &have).Error; err != nil {
		return nil, fmt.Errorf("read the counted %ss: %w", column, err)
	}
	counted := map[int64]bool{}
	for _, b := range have {
		counted[b.UTC().Unix()] = true
	}
	var out []time.Time
	for b := first; !b.After(current); b = b.Add(size) {
		if !counted[b.Unix()] || !b.Before(current.Add(-size)) {
			out = append(out, b)
		}
	}
	return out, nil
}

// storeBucket replaces one bucket's counted rows with rows, in one
// transaction. A bucket with nothing in it is stored as the quiet row, so
// that it reads as counted; stamp sets each row's bucket and counting time.
func storeBucket[T any](db *gorm.DB, column string, start time.Time, rows []T, quiet T, stamp func(*T)) error {
	return db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Where(column+" = ?", start).Delete(new(T)).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			rows = []T{quiet}
		}
		for i := range rows {
			stamp(&rows[i])
		}
		return tx.Create(&rows).Error
	})
}
