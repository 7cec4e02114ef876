package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Why a webhook delivery was refused before anything of it was stored.
const (
	// RefusedSignature: the signature is missing, malformed or matches no secret.
	RefusedSignature = "signature"
	// RefusedTimestamp: the signed timestamp is too old or too far ahead.
	RefusedTimestamp = "timestamp"
	// RefusedShape: authentic, but no event can be read from it: not JSON,
	// no event id, an id no database can hold.
	RefusedShape = "shape"
)

// WebhookRefusal is one row of webhook_refusals: the deliveries of one
// service refused for one reason within one hour (migration 0018).
type WebhookRefusal struct {
	Hour       time.Time `gorm:"primaryKey"`
	Service    string    `gorm:"primaryKey"`
	Reason     string    `gorm:"primaryKey"`
	N          int64
	LastAt     time.Time
	LastDetail string
}

// TableName is the webhook_refusals table.
func (WebhookRefusal) TableName() string { return "webhook_refusals" }

// RecordRefusals adds n refusals of a service for a reason, the last of
// them at `at` with its reason in words, to the row of at's hour. One
// statement: the row's key, not a prior read, decides between instances
// adding at once, and the counts add up exactly. The detail kept is the
// latest refusal's, whichever instance saw it.
func RecordRefusals(db *gorm.DB, service, reason string, n int64, at time.Time, detail string) error {
	at = at.UTC()
	err := db.Exec(`INSERT INTO webhook_refusals (hour, service, reason, n, last_at, last_detail) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (hour, service, reason) DO UPDATE SET n = webhook_refusals.n + excluded.n,
		last_detail = CASE WHEN excluded.last_at >= webhook_refusals.last_at THEN excluded.last_detail ELSE webhook_refusals.last_detail END,
		last_at = CASE WHEN excluded.last_at > webhook_refusals.last_at THEN excluded.last_at ELSE webhook_refusals.last_at END`,
		at.Truncate(time.Hour), service, reason, n, at, detail).Error
	if err != nil {
		return fmt.Errorf("count the refused webhooks of %s: %w", service, err)
	}
	return nil
}

// RefusalSummary is what one service's refused webhooks came to over a
// while: how many, and the last one's time, reason and words.
type RefusalSummary struct {
	N          int64
	LastAt     time.Time
	LastReason string
	LastDetail string
}

// RefusalsSince sums each service's refusals in the hours from since's
// hour on (so up to an hour more than asked), by service. A day's rows are
// at most 24 × services × 3, read by the key's leading hour.
func RefusalsSince(db *gorm.DB, since time.Time) (map[string]RefusalSummary, error) {
	var rows []WebhookRefusal
	if err := db.Where("hour >= ?", since.UTC().Truncate(time.Hour)).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the refused webhooks: %w", err)
	}
	out := map[string]RefusalSummary{}
	for _, r := range rows {
		s := out[r.Service]
		s.N += r.N
		if r.LastAt.After(s.LastAt) {
			s.LastAt, s.LastReason, s.LastDetail = r.LastAt, r.Reason, r.LastDetail
		}
		out[r.Service] = s
	}
	return out, nil
}

// LastEventAt is when the newest event stored for a provider was received
// (its first delivery), zero when there is none: one seek down
// processed_events_provider_list_idx (0005).
func LastEventAt(db *gorm.DB, provider string) (time.Time, error) {
	var ev ProcessedEvent
	err := db.Select("received_at").Where("provider = ?", provider).Order("received_at DESC").Take(&ev).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read the last event of %s: %w", provider, err)
	}
	return ev.ReceivedAt, nil
}

// PruneRefusals deletes the refusal counts of the hours before a time.
func PruneRefusals(db *gorm.DB, before time.Time) (int64, error) {
	res := db.Where("hour < ?", before.UTC()).Delete(&WebhookRefusal{})
	if res.Error != nil {
		return 0, fmt.Errorf("prune the refused webhooks: %w", res.Error)
	}
	return res.RowsAffected, nil
}
