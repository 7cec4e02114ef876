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

// CountOutcomesSince counts each service's calls since a time, by outcome:
// the recent health the Services page shows.
//
// The scan starts from attempts_created_outcome_idx, so its cost follows the calls
// of the window, not the size of the log; each attempt then finds its link
// by primary key. SQLite, without statistics, would rather walk every link
// and probe attempts_link_created_idx, hence INDEXED BY.
func CountOutcomesSince(db *gorm.DB, since time.Time) ([]OutcomeCount, error) {
	from := indexedBy(Dialect(db), "attempts a", "attempts_created_outcome_idx")
	q := `SELECT m.external_service AS service, a.outcome AS outcome, COUNT(*) AS n FROM ` + from +
		` JOIN external_map m ON m.id = a.link_id WHERE a.created_at >= ?
		GROUP BY m.external_service, a.outcome`
	var out []OutcomeCount
	if err := db.Raw(q, since.UTC()).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("count outcomes since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return out, nil
}
