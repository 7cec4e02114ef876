package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ServicePause is a service whose sending an operator stopped: links to it
// wait, nothing is claimed, until someone resumes it.
type ServicePause struct {
	Service  string `gorm:"primaryKey"`
	PausedBy string
	PausedAt time.Time
	Reason   string
	// KeptAt is when PausedBy, a person, took over the breaker's pause
	// (Keep paused); PausedAt and Reason stay the breaker's. Nil for a
	// pause no one took over (migration 0036).
	KeptAt *time.Time
}

// TableName is the service_pauses table.
func (ServicePause) TableName() string { return "service_pauses" }

// Pause records that p.Service is paused and returns the pause that holds.
// A service already paused keeps its first pause (created is false): the
// primary key and ON CONFLICT DO NOTHING decide between concurrent callers,
// never a check-then-insert.
func Pause(db *gorm.DB, p ServicePause) (held ServicePause, created bool, err error) {
	p.PausedAt = p.PausedAt.UTC()
	// A resume can slip in between the insert that lost and the read of
	// the winner; then the next round inserts.
	for range 3 {
		// A person's pause takes over an automatic one: the service stays
		// paused, and no probe of its breaker lifts it any more. It keeps
		// its paused_at: the service has been paused since then, and the
		// service_paused alert measures the pause from it (a fresh time
		// would close the incident while the service stays paused). It
		// keeps the breaker's reason too, and records who took it over
		// (paused_by) and when (kept_at), for the pages and the alert.
		conflict := clause.OnConflict{DoNothing: true}
		if p.PausedBy != AutomaticPauser {
			conflict = clause.OnConflict{Columns: []clause.Column{{Name: "service"}},
				DoUpdates: clause.Assignments(map[string]any{"paused_by": p.PausedBy, "kept_at": p.PausedAt}),
				Where:     clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "service_pauses.paused_by = ?", Vars: []any{AutomaticPauser}}}}}
		}
		res := db.Clauses(conflict, clause.Returning{}).Create(&p)
		if res.Error != nil {
			return ServicePause{}, false, fmt.Errorf("pause %s: %w", p.Service, res.Error)
		}
		if res.RowsAffected == 1 {
			p.PausedAt = p.PausedAt.UTC()
			return p, true, nil // as stored: RETURNING gives a taken-over pause's first paused_at, reason and kept_at
		}
		err := db.Where("service = ?", p.Service).Take(&held).Error
		if err == nil {
			return held, false, nil
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return ServicePause{}, false, fmt.Errorf("read pause of %s: %w", p.Service, err)
		}
	}
	return ServicePause{}, false, fmt.Errorf("pause %s: paused and resumed concurrently, try again", p.Service)
}

// Resume lifts the pause of service, by hand or automatic, closes its
// breaker (a person decided to try again), and reports whether there was a
// pause. Resuming a service that is not paused changes nothing.
func Resume(db *gorm.DB, service string) (was bool, err error) {
	err = db.Transaction(func(tx *gorm.DB) error {
		// The breaker's row first, as TripBreaker and CloseBreaker take them.
		if err := tx.Exec(`UPDATE service_breakers SET `+closedSet+` WHERE service = ?`, service).Error; err != nil {
			return fmt.Errorf("close the breaker of %s: %w", service, err)
		}
		res := tx.Where("service = ?", service).Delete(&ServicePause{})
		if res.Error != nil {
			return fmt.Errorf("resume %s: %w", service, res.Error)
		}
		was = res.RowsAffected > 0
		return nil
	})
	return was, err
}

// Automatic reports whether the pause was made by the service's breaker
// and is still its own: its probes may lift it.
func (p ServicePause) Automatic() bool { return p.PausedBy == AutomaticPauser }

// Kept reports whether a person took over the breaker's pause: PausedBy
// keeps it paused since KeptAt, for the breaker's Reason.
func (p ServicePause) Kept() bool { return p.KeptAt != nil }

// ListPauses returns every paused service, the longest-paused first.
func ListPauses(db *gorm.DB) ([]ServicePause, error) {
	var out []ServicePause
	if err := db.Order("paused_at, service").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list paused services: %w", err)
	}
	return out, nil
}

// IsPaused reports whether service is paused.
func IsPaused(db *gorm.DB, service string) (bool, error) {
	var n int64
	if err := db.Model(&ServicePause{}).Where("service = ?", service).Count(&n).Error; err != nil {
		return false, fmt.Errorf("is %s paused: %w", service, err)
	}
	return n > 0, nil
}
