package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Event outcomes.
const (
	EventApplied = "applied" // the effect ran
	EventIgnored = "ignored" // nothing to do: unknown type, or a guarded transition that had already happened
	EventFailed  = "failed"  // well-formed but can never apply; shown to an operator
)

// RecordEvent inserts an accepted webhook, ignoring a conflict on
// (provider, event_id): the primary key, not a prior SELECT, decides which
// of several concurrent deliveries is the first. It reports whether this
// call inserted the row.
func RecordEvent(tx *gorm.DB, ev ProcessedEvent) (bool, error) {
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&ev)
	if res.Error != nil {
		return false, fmt.Errorf("record event %s/%s: %w", ev.Provider, ev.EventID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// HoldEvent keeps every other delivery of an event from applying it until
// tx ends, then says whether the event is stored, and with which outcome,
// as the delivery that held it before left it. On Postgres it takes an
// advisory lock on the event's id (migrations/postgres/0029_hold_event.sql);
// on SQLite tx holds the database's one write lock already, and it reads.
func HoldEvent(tx *gorm.DB, provider, eventID string) (outcome string, stored bool, err error) {
	if Dialect(tx) != Postgres {
		known, err := EventOutcomes(tx, provider, []string{eventID})
		outcome, stored = known[eventID]
		return outcome, stored, err
	}
	var got *string
	if err := tx.Raw("SELECT syncdesk_hold_event(?, ?)", provider, eventID).Scan(&got).Error; err != nil {
		return "", false, fmt.Errorf("hold event %s/%s: %w", provider, eventID, err)
	}
	if got == nil {
		return "", false, nil
	}
	return *got, true, nil
}

// CountDuplicate notes one more delivery of an event already processed.
func CountDuplicate(tx *gorm.DB, provider, eventID string, now time.Time) error {
	return tx.Model(&ProcessedEvent{}).Where("provider = ? AND event_id = ?", provider, eventID).
		Updates(map[string]any{"duplicates": gorm.Expr("duplicates + 1"), "last_duplicate_at": now}).Error
}

// DuplicateCount is the re-sends of one event counted since they were last
// written: how many, and when the last came.
type DuplicateCount struct {
	Provider, EventID string
	N                 int
	At                time.Time
}

// duplicatesPerStatement bounds one AddDuplicates statement's events (4
// parameters each, far below either database's limit).
const duplicatesPerStatement = 250

// AddDuplicates adds counted re-sends to their events, a statement per
// duplicatesPerStatement events, and returns the counts it did not write.
// On Postgres it skips an event whose row another transaction holds
// (SKIP LOCKED): a delivery holds the rows of its list's events in the
// list's order while it commits, and a write that waited for them in
// another order could meet it in a deadlock. An event pruned meanwhile is
// not written either.
func AddDuplicates(tx *gorm.DB, counts []DuplicateCount) ([]DuplicateCount, error) {
	var left []DuplicateCount
	for start := 0; start < len(counts); start += duplicatesPerStatement {
		part := counts[start:min(start+duplicatesPerStatement, len(counts))]
		written, err := addDuplicates(tx, part)
		if err != nil {
			return nil, fmt.Errorf("count re-sent events: %w", err)
		}
		for _, c := range part {
			if !written[c.Provider+"\x00"+c.EventID] {
				left = append(left, c)
			}
		}
	}
	return left, nil
}

// addDuplicates is one UPDATE … FROM over a list of counts (SQLite ≥ 3.33
// and Postgres both take it), returning the events it wrote, keyed
// provider NUL event id.
func addDuplicates(tx *gorm.DB, counts []DuplicateCount) (map[string]bool, error) {
	list, args := countsList(Dialect(tx), counts)
	locked := ""
	if Dialect(tx) == Postgres {
		locked = ` AND (processed_events.provider, processed_events.event_id) IN (SELECT p.provider, p.event_id
			FROM processed_events p WHERE (p.provider, p.event_id) IN (SELECT provider, event_id FROM v) FOR UPDATE SKIP LOCKED)`
	}
	var written []struct{ Provider, EventID string }
	err := tx.Raw(`WITH v AS (`+list+`)
		UPDATE processed_events SET duplicates = duplicates + v.n, last_duplicate_at = v.at FROM v
		WHERE processed_events.provider = v.provider AND processed_events.event_id = v.event_id`+locked+`
		RETURNING processed_events.provider, processed_events.event_id`, args...).Scan(&written).Error
	out := make(map[string]bool, len(written))
	for _, w := range written {
		out[w.Provider+"\x00"+w.EventID] = true
	}
	return out, err
}

// countsList is the counts as rows (provider, event_id, n, at) for a WITH.
// On SQLite it is a SELECT of parameters per count. On Postgres it is one
// JSON parameter: Postgres planned a statement of 250 such SELECTs in some
// 37 ms at each write (pg_stat_statements, 2 cores), longer than its
// UPDATE ran; a statement over one parameter keeps one plan.
func countsList(dialect string, counts []DuplicateCount) (string, []any) {
	if dialect == Postgres {
		type count struct {
			Provider string    `json:"provider"`
			EventID  string    `json:"event_id"`
			N        int       `json:"n"`
			At       time.Time `json:"at"`
		}
		list := make([]count, len(counts))
		for i, c := range counts {
			list[i] = count{c.Provider, c.EventID, c.N, c.At.UTC()}
		}
		doc, _ := json.Marshal(list) // strings, an int and times: it cannot fail
		return `SELECT * FROM json_to_recordset(CAST(? AS json)) AS v (provider text, event_id text, n integer, at timestamptz)`, []any{string(doc)}
	}
	rows := make([]string, len(counts))
	args := make([]any, 0, 4*len(counts))
	for i, c := range counts {
		rows[i] = "SELECT ? AS provider, ? AS event_id, CAST(? AS INTEGER) AS n, ? AS at"
		args = append(args, c.Provider, c.EventID, c.N, c.At.UTC())
	}
	return strings.Join(rows, " UNION ALL "), args
}

// EventOutcomes reads the first outcome of each of ids that is stored for
// provider, by id: one read by the primary key, outside any transaction.
func EventOutcomes(db *gorm.DB, provider string, ids []string) (map[string]string, error) {
	var rows []struct{ EventID, Outcome string }
	err := db.Model(&ProcessedEvent{}).Select("event_id, outcome").
		Where("provider = ? AND event_id IN ?", provider, ids).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", provider, err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.EventID] = r.Outcome
	}
	return out, nil
}

// EventByID finds a processed event.
func EventByID(db *gorm.DB, provider, eventID string) (*ProcessedEvent, error) {
	var ev ProcessedEvent
	err := db.Where("provider = ? AND event_id = ?", provider, eventID).Take(&ev).Error
	return &ev, notFound(err, "event "+provider+"/"+eventID)
}

// PruneEvents deletes up to batch events received before a time.
func PruneEvents(db *gorm.DB, before time.Time, batch int) (int64, error) {
	sub := db.Model(&ProcessedEvent{}).Select("provider, event_id").Where("received_at < ?", before).Limit(batch)
	res := db.Where("(provider, event_id) IN (?)", sub).Delete(&ProcessedEvent{})
	return res.RowsAffected, res.Error
}

// LinkByExternal finds the link of a service to a provider's object: by the
// provider's id, which names one object for good, else by our external key,
// which is what a link that never learnt its object's id (a lost create
// response) can be found by. The id is asked first, and on its own: a key
// can be carried by two objects (a duplicate), and a link found by key may
// point at another object than the one the caller names — the caller
// compares the link's ExternalID before acting on it.
func LinkByExternal(tx *gorm.DB, service, externalID, externalKey string) (*Link, error) {
	var l Link
	if externalID != "" {
		err := tx.Where("external_service = ? AND external_id = ?", service, externalID).Order("id").Take(&l).Error
		if !errors.Is(err, gorm.ErrRecordNotFound) || externalKey == "" {
			return &l, notFound(err, "link of "+service+" "+externalID)
		}
	}
	if externalKey == "" {
		return nil, fmt.Errorf("link: %w", ErrNotFound)
	}
	err := tx.Where("external_service = ? AND external_key = ?", service, externalKey).Order("id").Take(&l).Error
	return &l, notFound(err, "link of "+service+" "+externalKey)
}

// LinkedRecord is the link of a provider's object, with its record.
type LinkedRecord struct {
	Link   *Link
	Record *Record // nil when the link has no record
	// Alone: when read, the record had no link to another service, so a
	// change of it owes no other service a push (see RecordMovedByProvider).
	// False when not known.
	Alone bool
}

// LinkedRecordByExternal is LinkByExternal and LockRecord of the link's
// record, in one statement where both are found, as they almost always
// are: a webhook's effect is a round trip shorter, where Postgres is
// bound by them. The link is found as LinkByExternal finds it, by the id
// first and on its own; a missing link is ErrNotFound.
func LinkedRecordByExternal(tx *gorm.DB, service, externalID, externalKey string) (LinkedRecord, error) {
	var row linkAndRecord
	// first is the link LinkByExternal finds by one column; joined reads it
	// with its record.
	first := func(column, value string) *gorm.DB {
		return tx.Table("external_map").Select("id").Where("external_service = ? AND "+column+" = ?", service, value).Order("id").Limit(1)
	}
	joined := func(link *gorm.DB) *gorm.DB {
		q := tx.Table("external_map").Select("external_map.*, "+recordColumnsAs+", NOT EXISTS (SELECT 1 FROM external_map others "+
			"WHERE others.local_type = external_map.local_type AND others.local_id = external_map.local_id AND others.id <> external_map.id) AS alone").
			Joins("JOIN records ON records.local_type = external_map.local_type AND records.local_id = external_map.local_id").
			Where("external_map.id = (?)", link)
		if Dialect(tx) == Postgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Table: clause.Table{Name: "records"}})
		}
		return q
	}
	var err error
	switch {
	case externalID != "":
		err = joined(first("external_id", externalID)).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) && externalKey != "" {
			// By our key only when no link has the id, with a record or not.
			err = joined(first("external_key", externalKey)).
				Where("NOT EXISTS (?)", first("external_id", externalID)).Take(&row).Error
		}
	case externalKey != "":
		err = joined(first("external_key", externalKey)).Take(&row).Error
	default:
		return LinkedRecord{}, fmt.Errorf("link: %w", ErrNotFound)
	}
	if err == nil {
		return LinkedRecord{Link: &row.Link, Record: &row.Record, Alone: row.Alone}, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return LinkedRecord{}, err
	}
	// No link, or a link without its record: the two reads tell which.
	link, err := LinkByExternal(tx, service, externalID, externalKey)
	if err != nil {
		return LinkedRecord{}, err
	}
	rec, err := LockRecord(tx, link.LocalType, link.LocalID)
	if errors.Is(err, ErrNotFound) {
		return LinkedRecord{Link: link}, nil
	}
	return LinkedRecord{Link: link, Record: rec}, err
}

// linkAndRecord is one row of a link joined to its record.
type linkAndRecord struct {
	Link
	Record Record `gorm:"embedded;embeddedPrefix:rec_"`
	Alone  bool
}

// recordColumnsAs selects every column of records as linkAndRecord's
// Record reads it.
const recordColumnsAs = "records.id AS rec_id, records.local_type AS rec_local_type, records.local_id AS rec_local_id, " +
	"records.payload AS rec_payload, records.content_hash AS rec_content_hash, records.created_at AS rec_created_at, " +
	"records.updated_at AS rec_updated_at, records.deleted_at AS rec_deleted_at, " +
	"records.field_times AS rec_field_times, records.field_times_since AS rec_field_times_since"

// LockRecord reads a record for update: on Postgres the row is locked until
// the transaction ends; on SQLite the transaction already holds the write lock.
func LockRecord(tx *gorm.DB, localType, localID string) (*Record, error) {
	var r Record
	q := tx
	if Dialect(tx) == Postgres {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	err := q.Where("local_type = ? AND local_id = ?", localType, localID).Take(&r).Error
	return &r, notFound(err, "record "+localType+"/"+localID)
}

// SetRecordPayload replaces a record's payload, in which the fields changed
// took their values at at (a provider's change: when it happened); it is a
// compare-and-set on the hash the caller read, and so on the field times
// (ChangeTimes) read with it: they change with the payload.
func SetRecordPayload(tx *gorm.DB, r *Record, payload, hash string, changed []string, at, now time.Time) error {
	times, err := stampFields(r.FieldTimes, changed, at)
	if err != nil {
		return fmt.Errorf("record %s/%s: %w", r.LocalType, r.LocalID, err)
	}
	res := tx.Model(&Record{}).Where("id = ? AND content_hash = ?", r.ID, r.ContentHash).
		Updates(map[string]any{"payload": payload, "content_hash": hash, "updated_at": now, "field_times": times,
			"field_times_since": gorm.Expr("COALESCE(field_times_since, updated_at)")})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("record %s/%s changed meanwhile: %w", r.LocalType, r.LocalID, ErrConflict)
	}
	return nil
}
