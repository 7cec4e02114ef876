package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// A record's field times (migration 0033) say when each of its fields last
// changed, by a local write or by a provider's change: a provider's change
// of a field is older news only when that field changed after it, whatever
// the record's other fields did since. records.field_times names the fields
// changed since records.field_times_since; a field it does not name last
// changed at or before field_times_since, or, while that is NULL (nothing
// changed since the record was first written, or since the migration), at
// or before updated_at. An upsert drops the times of the fields removed by
// an earlier write (pruneGone), which then count as unnamed.

// fieldTimeLayout is how field_times writes a time, in UTC.
const fieldTimeLayout = time.RFC3339Nano

// FieldTimes says when each field of a record last changed.
type FieldTimes struct {
	named map[string]time.Time
	rest  time.Time // every field not in named changed last at or before it
}

// ChangeTimes reads when each of the record's fields last changed.
func (r *Record) ChangeTimes() (FieldTimes, error) {
	named, err := decodeFieldTimes(r.FieldTimes)
	if err != nil {
		return FieldTimes{}, fmt.Errorf("record %s/%s: %w", r.LocalType, r.LocalID, err)
	}
	t := FieldTimes{named: make(map[string]time.Time, len(named)), rest: r.UpdatedAt}
	if r.FieldTimesSince != nil {
		t.rest = *r.FieldTimesSince
	}
	for f, s := range named {
		at, err := time.Parse(fieldTimeLayout, s)
		if err != nil {
			return FieldTimes{}, fmt.Errorf("record %s/%s: the time of field %s: %w", r.LocalType, r.LocalID, f, err)
		}
		t.named[f] = at
	}
	return t, nil
}

// Of is when the field f last changed: for a field changed before the
// record knew its fields' times, the latest time it may have changed.
func (t FieldTimes) Of(f string) time.Time {
	if at, ok := t.named[f]; ok {
		return at
	}
	return t.rest
}

// stampFields returns the field times fieldTimes (records.field_times)
// with the fields given changed at at.
func stampFields(fieldTimes string, fields []string, at time.Time) (string, error) {
	named, err := decodeFieldTimes(fieldTimes)
	if err != nil {
		return "", err
	}
	return stampNamed(named, fields, at)
}

// stampNamed is stampFields on field times already read.
func stampNamed(named map[string]string, fields []string, at time.Time) (string, error) {
	for _, f := range fields {
		named[f] = at.UTC().Format(fieldTimeLayout)
	}
	out, err := json.Marshal(named)
	return string(out), err
}

func decodeFieldTimes(s string) (map[string]string, error) {
	named := map[string]string{}
	if s == "" {
		return named, nil
	}
	if err := json.Unmarshal([]byte(s), &named); err != nil {
		return nil, fmt.Errorf("field times: %w", err)
	}
	return named, nil
}

// storedRecord is what UpsertRecords reads of a record it may update.
type storedRecord struct {
	RecordKey
	Payload, ContentHash, FieldTimes string
	Deleted                          bool
}

// storedForUpsert reads the stored rows of the records a batch writes, in
// one statement, in the batch's transaction. On SQLite the write lock
// (transactions begin IMMEDIATE) keeps them as read until the upsert. On
// Postgres they are not locked: the upsert locks its rows in its own order,
// and a lock here, taken in the database's collation order, would deadlock
// two batches against each other. A record another batch writes between
// the two statements has its fields' times noted from the payload read —
// at worst a field counts as changed a moment early or late.
func storedForUpsert(tx *gorm.DB, sorted []RecordWrite) (map[RecordKey]storedRecord, error) {
	keys := make([]RecordKey, len(sorted))
	for i, w := range sorted {
		keys[i] = w.RecordKey
	}
	out := make(map[RecordKey]storedRecord, len(keys))
	with, args := keysTable(keys)
	var rows []storedRecord
	err := tx.Raw(with+` SELECT r.local_type, r.local_id, r.payload, r.content_hash, r.field_times, r.deleted_at IS NOT NULL AS deleted
		FROM records r JOIN k ON r.local_type = k.local_type AND r.local_id = k.local_id`, args...).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read %d records to write: %w", len(keys), err)
	}
	for _, r := range rows {
		out[r.RecordKey] = r
	}
	return out, nil
}

// fieldTimesAfter is the stored record's field times once payload replaces
// its payload at now: the fields whose values differ — changed, added or
// removed — stamped now. Both payloads are canonical, so a value is the
// same exactly when its text is, nested objects and numbers alike; the
// comparison is in Go, not in SQL, which on SQLite would pair every field
// with every other and on Postgres refuse a payload holding \u0000.
//
// The times of fields that neither payload has are dropped (pruneGone):
// without that, a record whose fields come and go would name every field
// it ever had, for ever.
func fieldTimesAfter(stored storedRecord, payload string, now time.Time) (string, error) {
	var before, after map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stored.Payload), &before); err != nil {
		before = nil // a payload stored before payloads had to be objects: every field is new
	}
	if err := json.Unmarshal([]byte(payload), &after); err != nil {
		return "", fmt.Errorf("the payload is not a JSON object: %w", err)
	}
	var fields []string
	for f, v := range after {
		if old, ok := before[f]; !ok || !bytes.Equal(old, v) {
			fields = append(fields, f)
		}
	}
	for f := range before {
		if _, ok := after[f]; !ok {
			fields = append(fields, f)
		}
	}
	named, err := decodeFieldTimes(stored.FieldTimes)
	if err != nil {
		return "", err
	}
	pruneGone(named, before, after)
	return stampNamed(named, fields, now)
}

// pruneGone drops from named the times of the fields that neither the
// payload before a write nor the one after it has: fields removed by an
// earlier write. A field this write removes keeps its time (stamped now)
// until the record's next write: a provider's change of it made before
// the removal, which arrives meanwhile — the usual race of a removal with
// a change at the provider — is older news, and does not bring it back.
// Once dropped, the field counts as changed when the record's field times
// began (FieldTimes.Of), as a field it never had does; the fields the
// payload has keep their own times, so no change of one is lost behind
// another's.
func pruneGone(named map[string]string, before, after map[string]json.RawMessage) {
	for f := range named {
		_, had := before[f]
		_, has := after[f]
		if !had && !has {
			delete(named, f)
		}
	}
}
