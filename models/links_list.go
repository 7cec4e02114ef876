package models

import (
	"time"

	"gorm.io/gorm"
)

// Error classes a person filters failures by.
const (
	ClassTemporary = "temporary" // waiting for a retry
	ClassPermanent = "permanent" // failed, needs a person
	ClassAmbiguous = "ambiguous" // the last attempt's outcome is unknown: the next one looks up first
)

// LinkQuery narrows the links list; empty fields match everything.
type LinkQuery struct {
	Service, LocalType string
	Status             Status
	Class              string
	// Search matches a local id, an external id or an external key exactly.
	Search   string
	BeforeID int64 // keyset cursor: links older than this one
	Limit    int
}

// SearchLinks returns links newest first. Every filter is an equality on an
// indexed column and the order is the primary key, so a deep page costs the
// same as the first.
func SearchLinks(db *gorm.DB, q LinkQuery) ([]Link, error) {
	tx := db.Model(&Link{})
	if q.Service != "" {
		tx = tx.Where("external_service = ?", q.Service)
	}
	if q.LocalType != "" {
		tx = tx.Where("local_type = ?", q.LocalType)
	}
	if q.Status != "" {
		tx = tx.Where("status = ?", q.Status)
	}
	switch q.Class {
	case ClassTemporary:
		tx = tx.Where("status = ?", StatusRetry)
	case ClassPermanent:
		tx = tx.Where("status = ?", StatusFailed)
	case ClassAmbiguous:
		tx = tx.Where("needs_lookup = ? AND status IN ?", true, []Status{StatusRetry, StatusNew, StatusProcessing})
	}
	if q.Search != "" {
		// Three indexed equalities joined by OR: each uses its own index.
		tx = tx.Where("local_id = ? OR external_id = ? OR external_key = ?", q.Search, q.Search, q.Search)
	}
	if q.BeforeID > 0 {
		tx = tx.Where("id < ?", q.BeforeID)
	}
	if q.Limit <= 0 || q.Limit > 200 {
		q.Limit = 50
	}
	var out []Link
	return out, tx.Order("id DESC").Limit(q.Limit).Find(&out).Error
}

// InProgressOf returns the in-progress row of a link's key, if any is live.
func InProgressOf(db *gorm.DB, l *Link, now time.Time) (*InProgress, error) {
	var rows []InProgress
	err := db.Where("external_service = ? AND local_type = ? AND local_id = ? AND expires_at > ?",
		l.ExternalService, l.LocalType, l.LocalID, now).Limit(1).Find(&rows).Error
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return &rows[0], nil
}

// FailedGroups returns the failed links' groups as last counted by
// RefreshFailedGroups, largest first: all of them for a limit of 0.
func FailedGroups(db *gorm.DB, limit int) ([]StatFailedGroup, error) {
	var out []StatFailedGroup
	q := db.Order("n DESC, error_group")
	if limit > 0 {
		q = q.Limit(limit)
	}
	return out, q.Find(&out).Error
}

// failedLiteral selects failed links with the status as a literal, not a
// parameter, so that the planners can use the partial indexes on failed links.
const failedLiteral = "status = 'failed'"

// failedLinks reads failed links through one of the partial indexes on
// them (migration 0012). SQLite, without statistics, would rather take the
// (status, id) index and sort every failed link, hence INDEXED BY there.
func failedLinks(db *gorm.DB, index string) *gorm.DB {
	return db.Table(indexedBy(Dialect(db), "external_map", index)).Where(failedLiteral)
}

// FailedIDs returns the ids of the failed links of one group, newest first.
func FailedIDs(db *gorm.DB, group string, limit int) ([]int64, error) {
	var ids []int64
	err := failedLinks(db, "external_map_failed_group_id_idx").Where("error_group = ?", group).
		Order("id DESC").Limit(limit).Pluck("id", &ids).Error
	return ids, err
}

// LinksByIDs returns the given links, newest first.
func LinksByIDs(db *gorm.DB, ids []int64) ([]Link, error) {
	var out []Link
	if len(ids) == 0 {
		return out, nil
	}
	return out, db.Where("id IN ?", ids).Order("id DESC").Find(&out).Error
}
