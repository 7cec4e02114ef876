package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// AlertSample is a count a rule took, to compare a later count with.
type AlertSample struct {
	Rule    string    `gorm:"primaryKey"`
	Subject string    `gorm:"primaryKey"`
	TakenAt time.Time `gorm:"primaryKey"`
	Anchor  time.Time // where the sampled sum starts, when the count is a sum over time
	Value   int64
}

// TableName is the alert_samples table.
func (AlertSample) TableName() string { return "alert_samples" }

// RecordSamples stores samples; one already taken at the same time (by
// another instance checking at once) is kept.
func RecordSamples(db *gorm.DB, samples []AlertSample) error {
	if len(samples) == 0 {
		return nil
	}
	for i := range samples {
		samples[i].TakenAt, samples[i].Anchor = samples[i].TakenAt.UTC(), samples[i].Anchor.UTC()
	}
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&samples).Error; err != nil {
		return fmt.Errorf("record alert samples: %w", err)
	}
	return nil
}

// SamplesAsOf returns, per subject of rule, the newest sample taken at or
// before at, or when a subject has none that old, its oldest: the count to
// compare with now. A subject never sampled is missing.
func SamplesAsOf(db *gorm.DB, rule string, at time.Time) (map[string]AlertSample, error) {
	var rows []AlertSample
	if err := db.Where("rule = ?", rule).Order("subject, taken_at").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read alert samples of %s: %w", rule, err)
	}
	out := map[string]AlertSample{}
	for _, s := range rows {
		// Sorted by time: a later sample not after at is a newer baseline.
		if _, seen := out[s.Subject]; !seen || !s.TakenAt.After(at) {
			out[s.Subject] = s
		}
	}
	return out, nil
}

// PruneSamples deletes rule's samples taken before keepFrom but the newest
// of them per subject, which the next comparison may still need; and those
// older than the newest "" sample before keepFrom, which says every subject
// not sampled with it had no count then (see the alerts' baseline), so a
// subject no longer counted leaves no sample behind for ever.
func PruneSamples(db *gorm.DB, rule string, keepFrom time.Time) error {
	err := db.Exec(`DELETE FROM alert_samples WHERE rule = ? AND taken_at < ? AND (taken_at < (
		SELECT MAX(s.taken_at) FROM alert_samples s WHERE s.rule = alert_samples.rule AND s.subject = alert_samples.subject AND s.taken_at < ?)
		OR taken_at < (SELECT MAX(m.taken_at) FROM alert_samples m WHERE m.rule = alert_samples.rule AND m.subject = '' AND m.taken_at < ?))`,
		rule, keepFrom.UTC(), keepFrom.UTC(), keepFrom.UTC()).Error
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("prune alert samples of %s: %w", rule, err)
	}
	return nil
}
