package models

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// StuckService is a service whose oldest due link has waited since Since.
type StuckService struct {
	Service string
	Since   time.Time // the oldest due link's next attempt
}

// StuckQueues returns the services, but those in skip, with a link due
// since before cutoff, each with its oldest. One seek down the due index
// per service found: a stuck link is by definition older than cutoff, so
// each query reads only stuck links, and a healthy queue costs one seek.
func StuckQueues(db *gorm.DB, cutoff time.Time, skip []string) ([]StuckService, error) {
	var out []StuckService
	seen := append([]string{""}, skip...) // NOT IN () is no SQL
	for range 1000 {
		var rows []struct {
			ExternalService string
			NextAttemptAt   time.Time
		}
		q := `SELECT external_service, next_attempt_at FROM ` + indexedBy(Dialect(db), "external_map", "external_map_due_idx") +
			` WHERE status IN ('new', 'retry') AND next_attempt_at <= ? AND external_service NOT IN ? ORDER BY next_attempt_at LIMIT 1`
		if err := db.Raw(q, cutoff.UTC(), seen).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("find stuck queues: %w", err)
		}
		if len(rows) == 0 {
			break
		}
		out = append(out, StuckService{Service: rows[0].ExternalService, Since: rows[0].NextAttemptAt})
		seen = append(seen, rows[0].ExternalService)
	}
	return out, nil
}

// WaitingRun is a service's latest compared reconciliation run, with what
// of it waits for a person.
type WaitingRun struct {
	ReconciliationRun
	Reported int64 // reported discrepancies nobody has resolved
}

// WaitingRuns returns, per service, its latest run that compared both
// sides to the end, when it stopped for a confirmation or has reported
// findings not resolved yet. An older run's findings are left out: the
// latest compared again since.
func WaitingRuns(db *gorm.DB) ([]WaitingRun, error) {
	var runs []ReconciliationRun
	err := db.Raw(`SELECT * FROM reconciliation_runs r WHERE r.id IN (
		SELECT MAX(id) FROM reconciliation_runs WHERE status IN ? GROUP BY service) ORDER BY r.service`, comparedStatuses).
		Scan(&runs).Error
	if err != nil {
		return nil, fmt.Errorf("read the latest reconciliation runs: %w", err)
	}
	var out []WaitingRun
	for _, r := range runs {
		var n int64
		if err := db.Model(&Discrepancy{}).Where("run_id = ? AND status = ? AND resolution = ''", r.ID, DiscrepancyReported).
			Count(&n).Error; err != nil {
			return nil, fmt.Errorf("count the findings of run %d waiting for a person: %w", r.ID, err)
		}
		if n > 0 || r.Status == RunAwaiting {
			out = append(out, WaitingRun{ReconciliationRun: r, Reported: n})
		}
	}
	return out, nil
}

// FailingTasks returns the scheduled tasks whose last times runs or more
// in a row failed.
func FailingTasks(db *gorm.DB, times int) ([]ScheduledTask, error) {
	var out []ScheduledTask
	if err := db.Where("failures >= ?", times).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("find failing tasks: %w", err)
	}
	return out, nil
}

// RefusalHour is one service's webhooks refused in one hour.
type RefusalHour struct {
	Service string
	Hour    time.Time
	N       int64
}

// RefusalHours returns per service and hour, from since's hour on, the
// webhooks refused for reasons: the rows the pages read, a handful a day.
func RefusalHours(db *gorm.DB, since time.Time, reasons []string) ([]RefusalHour, error) {
	var out []RefusalHour
	err := db.Model(&WebhookRefusal{}).Select("service, hour, SUM(n) AS n").
		Where("hour >= ? AND reason IN ?", since.UTC().Truncate(time.Hour), reasons).Group("service, hour").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read the refused webhooks: %w", err)
	}
	return out, nil
}
