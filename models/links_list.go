package models

import (
	"time"

	"gorm.io/gorm"
)

// Error classes a person filters failures by.
const (
	ClassTemporary = "temporary" // waiting for a retry
	ClassPermanent = "permanent" // failed, needs a person
	ClassAmbiguous = "ambiguous" // the last attempt's outcome is unknown: the next one guards against a second object as its service can
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
		// Four indexed equalities joined by OR: each uses its own index. The
		// idempotency key is the one a link's page and a provider's log show.
		tx = tx.Where("local_id = ? OR external_id = ? OR external_key = ? OR idempotency_key = ?", q.Search, q.Search, q.Search, q.Search)
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

// InProgressOfLinks returns the syncs under way of links, by link id, in
// one query: a list shows who asked for each. A link being sent under a live
// lease is under way whether or not somebody asked (see ClaimDue).
func InProgressOfLinks(db *gorm.DB, links []Link, now time.Time) (map[int64]InProgress, error) {
	out := map[int64]InProgress{}
	if len(links) == 0 {
		return out, nil
	}
	keys := make([]progressKey, len(links))
	byKey := map[progressKey][]int64{}
	for i, l := range links {
		keys[i] = l.progressKey()
		byKey[keys[i]] = append(byKey[keys[i]], l.ID)
		if l.sendingAt(now) {
			out[l.ID] = l.sendRow()
		}
	}
	var rows []InProgress
	if err := requestsOf(db, keys).Where("expires_at > ?", now).Find(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		for _, id := range byKey[r.progressKey()] {
			out[id] = r
		}
	}
	return out, nil
}

// FailedGroups returns the failed links' groups as last counted by
// RefreshFailedGroups, largest first: all of them for a limit of 0. Aside
// picks the groups of the links put aside instead of those on Failed.
func FailedGroups(db *gorm.DB, aside bool, limit int) ([]StatFailedGroup, error) {
	var out []StatFailedGroup
	q := db.Where("aside = ?", aside).Order("n DESC, error_group")
	if limit > 0 {
		q = q.Limit(limit)
	}
	return out, q.Find(&out).Error
}

// failedLiteral selects the failed links on Failed (not put aside), and
// asideLiteral those put aside, as literals, not parameters, so that the
// planners can use the partial indexes on them (migration 0020).
const (
	failedLiteral = "status = 'failed' AND put_aside_at IS NULL"
	asideLiteral  = "status = 'failed' AND put_aside_at IS NOT NULL"
)

// failedLinks reads the failed links on Failed through one of the partial
// indexes on them. SQLite, without statistics, would rather take the
// (status, id) index and sort every failed link, hence INDEXED BY there.
func failedLinks(db *gorm.DB, index string) *gorm.DB {
	return db.Table(indexedBy(Dialect(db), "external_map", index)).Where(failedLiteral)
}

// asideLinks reads the failed links put aside, through their partial index.
func asideLinks(db *gorm.DB) *gorm.DB {
	return db.Table(indexedBy(Dialect(db), "external_map", "external_map_aside_group_id_idx")).Where(asideLiteral)
}

// FailedIDs returns the ids of the failed links of one group, newest first:
// those on Failed, or with aside those put aside.
func FailedIDs(db *gorm.DB, group string, aside bool, limit int) ([]int64, error) {
	q := failedLinks(db, "external_map_failed_group_id_idx")
	if aside {
		q = asideLinks(db)
	}
	var ids []int64
	err := q.Where("error_group = ?", group).Order("id DESC").Limit(limit).Pluck("id", &ids).Error
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
