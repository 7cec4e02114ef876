package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// StatLinkCount is the number of links of a service in a status, as last counted.
type StatLinkCount struct {
	Service   string `gorm:"primaryKey"`
	Status    string `gorm:"primaryKey"`
	N         int64
	CountedAt time.Time
}

// StatAttemptHour is the number of attempts with an outcome in one hour.
type StatAttemptHour struct {
	Hour      time.Time `gorm:"primaryKey"`
	Outcome   string    `gorm:"primaryKey"`
	N         int64
	CountedAt time.Time
}

// RefreshStats recounts every aggregate the pages read instead of counting
// rows per view: links by status, attempts per hour, calls per minute by
// service, failed groups.
func RefreshStats(db *gorm.DB, now time.Time) error {
	return errors.Join(RefreshLinkCounts(db, now), RefreshAttemptHours(db, now), RefreshServiceMinutes(db, now),
		RefreshFailedGroups(db, now))
}

// StatFailedGroup is how many links are failed with one error group, and
// the newest of them, as last counted.
type StatFailedGroup struct {
	ErrorGroup string `gorm:"primaryKey"`
	Aside      bool   `gorm:"primaryKey"` // the links of the group put aside, counted apart
	N          int64
	ExampleID  int64
	CountedAt  time.Time
}

// maxFailedGroups bounds the groups kept: beyond it, the smallest are left out.
const maxFailedGroups = 1000

// RefreshFailedGroups recounts failed links by error group into the stats
// table, in one transaction: an exact count over every failed link's index
// entry, which a page view cannot afford at scale.
func RefreshFailedGroups(db *gorm.DB, now time.Time) error {
	var rows []StatFailedGroup
	for _, aside := range []bool{false, true} {
		q := failedLinks(db, "external_map_failed_group_id_idx")
		if aside {
			q = asideLinks(db)
		}
		var side []StatFailedGroup
		err := q.Select("error_group, COUNT(*) AS n, MAX(id) AS example_id").
			Group("error_group").Order("n DESC, error_group").Limit(maxFailedGroups).Scan(&side).Error
		if err != nil {
			return err
		}
		for i := range side {
			side[i].Aside, side[i].CountedAt = aside, now
		}
		rows = append(rows, side...)
	}
	return db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("1 = 1").Delete(&StatFailedGroup{}).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		return tx.CreateInBatches(&rows, 200).Error
	})
}

// asideCount is the stat_link_counts "status" of a service's failed links
// put aside: they are counted in its failed row too (the pages show them
// there), and apart under this name, for what reads only the links on
// Failed. LinkCounts leaves these rows out.
const asideCount = "failed_aside"

// RefreshLinkCounts recounts links by service and status into the stats
// table, in one transaction, so a page reads a handful of rows instead of
// counting every link. The failed links put aside are counted apart too.
func RefreshLinkCounts(db *gorm.DB, now time.Time) error {
	counts, err := CountLinksByStatus(db)
	if err != nil {
		return err
	}
	var aside []StatusCount
	err = asideLinks(db).Select("external_service AS service, COUNT(*) AS n").Group("external_service").Scan(&aside).Error
	if err != nil {
		return err
	}
	rows := make([]StatLinkCount, 0, len(counts)+len(aside))
	for _, c := range counts {
		rows = append(rows, StatLinkCount{Service: c.Service, Status: string(c.Status), N: c.N, CountedAt: now})
	}
	for _, c := range aside {
		rows = append(rows, StatLinkCount{Service: c.Service, Status: asideCount, N: c.N, CountedAt: now})
	}
	return db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("1 = 1").Delete(&StatLinkCount{}).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		return tx.Create(&rows).Error
	})
}

// LinkCounts returns the last counted links by service and status; a
// service's failed count includes its links put aside.
func LinkCounts(db *gorm.DB) ([]StatLinkCount, error) {
	var out []StatLinkCount
	return out, db.Where("status <> ?", asideCount).Order("service, status").Find(&out).Error
}

// FailedListCounts returns, per service with failed links, how many are on
// Failed (those put aside left out), as last counted, by service.
func FailedListCounts(db *gorm.DB) ([]StatLinkCount, error) {
	var rows []StatLinkCount
	err := db.Where("status IN ?", []string{string(StatusFailed), asideCount}).Order("service, status").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read the failed link counts: %w", err)
	}
	var out []StatLinkCount
	for _, r := range rows {
		// Ordered by service, then "failed" before "failed_aside".
		switch {
		case r.Status == string(StatusFailed):
			out = append(out, r)
		case len(out) > 0 && out[len(out)-1].Service == r.Service:
			out[len(out)-1].N -= r.N
		}
	}
	return out, nil
}

// RefreshAttemptHours recounts attempts per outcome for the current and the
// previous hour, and for any hour of the last day not counted yet. Earlier
// hours do not change, so each is counted once.
func RefreshAttemptHours(db *gorm.DB, now time.Time) error {
	current := now.UTC().Truncate(time.Hour)
	hours, err := bucketsToCount(db, &StatAttemptHour{}, "hour", current.Add(-23*time.Hour), now, time.Hour)
	if err != nil {
		return err
	}
	for _, h := range hours {
		if err := countHour(db, h, now); err != nil {
			return err
		}
	}
	return db.Where("hour < ?", current.Add(-48*time.Hour)).Delete(&StatAttemptHour{}).Error
}

func countHour(db *gorm.DB, hour, now time.Time) error {
	var rows []StatAttemptHour
	err := db.Model(&Attempt{}).Select("outcome, COUNT(*) AS n").
		Where("created_at >= ? AND created_at < ?", hour, hour.Add(time.Hour)).Group("outcome").Scan(&rows).Error
	if err != nil {
		return err
	}
	return storeBucket(db, "hour", hour, rows, StatAttemptHour{Outcome: string(OutcomeOK)},
		func(r *StatAttemptHour) { r.Hour, r.CountedAt = hour, now })
}

// AttemptHours returns the counted hours since a time, oldest first.
func AttemptHours(db *gorm.DB, since time.Time) ([]StatAttemptHour, error) {
	var out []StatAttemptHour
	return out, db.Where("hour >= ?", since).Order("hour, outcome").Find(&out).Error
}

// NewestFailures returns the most recently failed links, by when they
// failed.
func NewestFailures(db *gorm.DB, limit int) ([]Link, error) {
	var out []Link
	return out, failedLinks(db, "external_map_failed_at_idx").Order("failed_at DESC").Limit(limit).Find(&out).Error
}

// InProgressCounts counts the syncs under way.
type InProgressCounts struct {
	Live int64 // of services that are not paused: those InProgressRows lists
	// Waiting counts the Sync now requests among Live whose link is not
	// being sent yet: it waits its turn in the queue.
	Waiting int64
	Held    int64 // of paused services: they wait for the resume
}

// InProgressRows returns the syncs under way (see liveSyncs) of services
// that are not paused, oldest first, and how many there are: a Sync now of
// a paused service's link waits for the resume, and is not in progress.
// A row whose Holder is RequestHolder is a request whose link waits its turn.
func InProgressRows(db *gorm.DB, now time.Time, limit int) (rows []InProgress, n InProgressCounts, err error) {
	paused := db.Model(&ServicePause{}).Select("service")
	live := func() *gorm.DB { return db.Table("(?) AS s", liveSyncs(db, now)) }
	// The three counts in one pass over the syncs under way.
	err = live().Select(`COALESCE(SUM(CASE WHEN external_service NOT IN (?) THEN 1 ELSE 0 END), 0) AS live,
		COALESCE(SUM(CASE WHEN external_service NOT IN (?) AND holder = ? THEN 1 ELSE 0 END), 0) AS waiting,
		COALESCE(SUM(CASE WHEN external_service IN (?) THEN 1 ELSE 0 END), 0) AS held`,
		paused, paused, RequestHolder, paused).Scan(&n).Error
	if err != nil {
		return nil, n, err
	}
	return rows, n, live().Where("external_service NOT IN (?)", paused).Order("started_at").Limit(limit).Find(&rows).Error
}

// liveSyncs selects every sync under way at now as in_progress rows: the
// Sync now requests not yet answered, and the links being sent under a
// lease that has not run out (a claim writes no row: see ClaimDue), each
// with who asked for it, when somebody did.
func liveSyncs(db *gorm.DB, now time.Time) *gorm.DB {
	sending := `m.status = 'processing' AND m.locked_until > @now`
	request := `m.external_service = ip.external_service AND m.local_type = ip.local_type AND m.local_id = ip.local_id
		AND ip.holder = @request AND ip.expires_at > @now`
	// Plain columns, no COALESCE: SQLite types a column of this union by
	// its last branch, and a time with no declared type reads as text.
	return db.Raw(`SELECT ip.external_service, ip.local_type, ip.local_id, ip.holder, ip.started_by, ip.started_at, ip.expires_at
		FROM in_progress ip WHERE ip.holder = @request AND ip.expires_at > @now
			AND NOT EXISTS (SELECT 1 FROM external_map m WHERE `+request+` AND `+sending+`)
	UNION ALL
	SELECT m.external_service, m.local_type, m.local_id, m.lease_owner, ip.started_by, ip.started_at, m.locked_until
		FROM external_map m JOIN in_progress ip ON `+request+` WHERE `+sending+`
	UNION ALL
	SELECT m.external_service, m.local_type, m.local_id, m.lease_owner, @scheduler, m.updated_at, m.locked_until
		FROM external_map m WHERE `+sending+` AND NOT EXISTS (SELECT 1 FROM in_progress ip WHERE `+request+`)`,
		map[string]any{"now": now, "request": RequestHolder, "scheduler": SchedulerStarter})
}
