package models

import (
	"encoding/json"
	"fmt"
	"time"
)

// A record's field times (migration 0033) say when each of its fields last
// changed, by a local write or by a provider's change: a provider's change
// of a field is older news only when that field changed after it, whatever
// the record's other fields did since. records.field_times names the fields
// changed since records.field_times_since; a field it does not name last
// changed at or before field_times_since, or, while that is NULL (nothing
// changed since the record was first written, or since the migration), at
// or before updated_at.

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

// fieldTimesAfterUpsert is the SQL of records.field_times after the conflict
// update of UpsertRecords: the fields the new payload (excluded) holds
// otherwise than the old one — changed, added or removed — stamped with the
// one parameter, the write's time. Computed in the statement, from the row
// it locks, there is no read before the write and no race between the two,
// and a new record (no conflict) pays nothing. Values are compared as JSON:
// on SQLite by type and value (1 and 1.0 differ, as their payloads do), on
// Postgres as jsonb (1 and 1.0 are one).
func fieldTimesAfterUpsert(dialect string) string {
	if dialect == Postgres {
		return `(records.field_times::jsonb || COALESCE((SELECT jsonb_object_agg(COALESCE(n.key, o.key), ?::text)
			FROM jsonb_each(excluded.payload::jsonb) n FULL JOIN jsonb_each(records.payload::jsonb) o ON o.key = n.key
			WHERE n.value IS DISTINCT FROM o.value), '{}'::jsonb))::text`
	}
	return `json_patch(records.field_times, (SELECT json_group_object(COALESCE(n.key, o.key), ?)
			FROM json_each(excluded.payload) n FULL JOIN json_each(records.payload) o ON o.key = n.key
			WHERE n.type IS NOT o.type OR n.value IS NOT o.value))`
}
