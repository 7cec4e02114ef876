package models

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// OutcomeCount is how many of one service's calls ended one way.
type OutcomeCount struct {
	Service string
	Outcome Outcome
	N       int64
}

// StatServiceMinute is how many of one service's calls in one minute ended
// one way, as last counted.
type StatServiceMinute struct {
	Minute    time.Time `gorm:"primaryKey"`
	Service   string    `gorm:"primaryKey"`
	Outcome   string    `gorm:"primaryKey"`
	N         int64
	CountedAt time.Time
}

// serviceMinutesKept is how far back the minutes are kept: the Services
// page reads the last hour.
const serviceMinutesKept = 2 * time.Hour

// RefreshServiceMinutes counts the calls of each minute of the last hour
// that is not counted yet, and the current and the previous minute again
// (their calls may still be being written). Earlier minutes do not change,
// so after the first refresh each costs two small counts.
func RefreshServiceMinutes(db *gorm.DB, now time.Time) error {
	current := now.UTC().Truncate(time.Minute)
	minutes, err := bucketsToCount(db, &StatServiceMinute{}, "minute", current.Add(-time.Hour), now, time.Minute)
	if err != nil {
		return err
	}
	for _, m := range minutes {
		if err := countMinute(db, m, now); err != nil {
			return err
		}
	}
	return db.Where("minute < ?", current.Add(-serviceMinutesKept)).Delete(&StatServiceMinute{}).Error
}

// countMinute counts one minute's calls by service and outcome. The scan
// starts from attempts_created_outcome_idx and finds each attempt's link by
// primary key; SQLite, without statistics, would rather walk every link,
// hence INDEXED BY.
func countMinute(db *gorm.DB, minute, now time.Time) error {
	from := indexedBy(Dialect(db), "attempts a", "attempts_created_outcome_idx")
	q := `SELECT m.external_service AS service, a.outcome AS outcome, COUNT(*) AS n FROM ` + from +
		` JOIN external_map m ON m.id = a.link_id WHERE a.created_at >= ? AND a.created_at < ?
		GROUP BY m.external_service, a.outcome`
	var rows []StatServiceMinute
	if err := db.Raw(q, minute, minute.Add(time.Minute)).Scan(&rows).Error; err != nil {
		return fmt.Errorf("count calls of %s: %w", minute.Format(time.RFC3339), err)
	}
	return storeBucket(db, "minute", minute, rows, StatServiceMinute{Outcome: string(OutcomeOK)},
		func(r *StatServiceMinute) { r.Minute, r.CountedAt = minute, now })
}

// CountOutcomesSince sums each service's calls since a time, by outcome,
// from the minutes refresh-stats counted: the recent health the Services
// page shows, to the minute.
func CountOutcomesSince(db *gorm.DB, since time.Time) ([]OutcomeCount, error) {
	var out []OutcomeCount
	err := db.Model(&StatServiceMinute{}).Select("service, outcome, SUM(n) AS n").
		Where("minute >= ? AND service <> ''", since.UTC().Truncate(time.Minute)).Group("service, outcome").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("count outcomes since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return out, nil
}
