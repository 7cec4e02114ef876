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
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&p)
		if res.Error != nil {
			return ServicePause{}, false, fmt.Errorf("pause %s: %w", p.Service, res.Error)
		}
		if res.RowsAffected == 1 {
			return p, true, nil
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

// Resume lifts the pause of service and reports whether there was one.
// Resuming a service that is not paused changes nothing.
func Resume(db *gorm.DB, service string) (bool, error) {
	res := db.Where("service = ?", service).Delete(&ServicePause{})
	if res.Error != nil {
		return false, fmt.Errorf("resume %s: %w", service, res.Error)
	}
	return res.RowsAffected > 0, nil
}

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
