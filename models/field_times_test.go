package models_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// fieldsAt reads when each of the fields of order/id last changed.
func fieldsAt(t *testing.T, db *gorm.DB, id string, fields ...string) map[string]time.Time {
	t.Helper()
	rec, err := models.RecordByKey(db, "order", id)
	require.NoError(t, err)
	times, err := rec.ChangeTimes()
	require.NoError(t, err)
	out := map[string]time.Time{}
	for _, f := range fields {
		out[f] = times.Of(f).UTC()
	}
	return out
}

func upsertOrder(t *testing.T, db *gorm.DB, payload string, at time.Time) bool {
	t.Helper()
	v, h, err := models.CanonicalPayload([]byte(payload))
	require.NoError(t, err)
	changed, err := models.UpsertRecord(db, "order", "1", v, h, at)
	require.NoError(t, err)
	return changed
}

// An upsert notes when the fields whose values it changed did, in the same
// statement: a field added, changed (nested values, null, a number become
// text) or removed; the others keep their times, the same payload again
// and a delete change none, and a record written again after its delete
// stamps only what differs from its last payload.
func TestAnUpsertNotesWhenEachFieldItChangedDid(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
		fields := []string{"a", "b", "c", "d", "e", "f"}
		require.True(t, upsertOrder(t, db, `{"a":1,"b":"x","c":{"k":[1,2]},"d":null,"e":true}`, at(0)))
		require.Equal(t, map[string]time.Time{"a": at(0), "b": at(0), "c": at(0), "d": at(0), "e": at(0), "f": at(0)},
			fieldsAt(t, db, "1", fields...), "a new record: every field changed when it was written")

		require.True(t, upsertOrder(t, db, `{"a":1,"b":"y","c":{"k":[1,2]},"d":null,"e":true,"f":"new"}`, at(1)))
		require.True(t, upsertOrder(t, db, `{"a":"1","b":"y","c":{"k":[2,1]},"d":0,"e":true,"f":"new"}`, at(2)))
		require.True(t, upsertOrder(t, db, `{"a":"1","b":"y","c":{"k":[2,1]},"d":0,"f":"new"}`, at(3)))
		require.False(t, upsertOrder(t, db, `{"a":"1","b":"y","c":{"k":[2,1]},"d":0,"f":"new"}`, at(4)))
		want := map[string]time.Time{"a": at(2), "b": at(1), "c": at(2), "d": at(2), "e": at(3), "f": at(1), "g": at(0)}
		require.Equal(t, want, fieldsAt(t, db, "1", "a", "b", "c", "d", "e", "f", "g"))

		_, err := models.TombstoneRecords(db, []models.RecordKey{{LocalType: "order", LocalID: "1"}}, at(5))
		require.NoError(t, err)
		require.Equal(t, want, fieldsAt(t, db, "1", "a", "b", "c", "d", "e", "f", "g"), "a delete changes no field")
		require.True(t, upsertOrder(t, db, `{"a":"1","b":"z","c":{"k":[2,1]},"d":0,"f":"new"}`, at(6)), "written again after its delete")
		want["b"] = at(6)
		want["e"] = at(0) // removed by an earlier write: its time is dropped (see the next test)
		require.Equal(t, want, fieldsAt(t, db, "1", "a", "b", "c", "d", "e", "f", "g"))
	})
}

// namedFields lists the fields order/id's field times name.
func namedFields(t *testing.T, db *gorm.DB, id string) []string {
	t.Helper()
	rec, err := models.RecordByKey(db, "order", id)
	require.NoError(t, err)
	var named map[string]string
	require.NoError(t, json.Unmarshal([]byte(rec.FieldTimes), &named))
	return slices.Sorted(maps.Keys(named))
}

// The field times name only the fields the payload has, and those the
// record's last write removed: a record whose fields come and go does not
// keep, for ever, when each one it ever had last changed. A field removed
// keeps its time until the next write, so a provider's change of it made
// before its removal is older news meanwhile; the fields the payload has
// keep their own times throughout.
func TestAnUpsertForgetsTheTimesOfFieldsItsPayloadNoLongerHas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
		require.True(t, upsertOrder(t, db, `{"a":1,"b":1,"c":1}`, at(0)))
		require.True(t, upsertOrder(t, db, `{"a":1,"b":2,"c":1}`, at(1)))
		require.True(t, upsertOrder(t, db, `{"a":1,"b":2}`, at(2)))
		require.Equal(t, []string{"b", "c"}, namedFields(t, db, "1"), "c, just removed, keeps its time")
		require.Equal(t, map[string]time.Time{"a": at(0), "b": at(1), "c": at(2)}, fieldsAt(t, db, "1", "a", "b", "c"))

		require.True(t, upsertOrder(t, db, `{"a":2,"b":2}`, at(3)))
		require.Equal(t, []string{"a", "b"}, namedFields(t, db, "1"), "c, removed by the write before, is no longer named")
		require.Equal(t, map[string]time.Time{"a": at(3), "b": at(1), "c": at(0)}, fieldsAt(t, db, "1", "a", "b", "c"),
			"c counts as changed when the record's field times began, as a field it never had")

		for i := range 50 { // a field of its own in each write
			require.True(t, upsertOrder(t, db, fmt.Sprintf(`{"a":2,"b":2,"k%d":1}`, i), at(4+i)))
		}
		require.Equal(t, []string{"a", "b", "k48", "k49"}, namedFields(t, db, "1"),
			"the fields the payload has, and the one its last write removed")
		require.Equal(t, map[string]time.Time{"a": at(3), "b": at(1)}, fieldsAt(t, db, "1", "a", "b"))
	})
}

// A webhook's change stamps the fields it names with the time it happened;
// the record's updated_at is when it was written. A record that had no
// field times (written before migration 0033, or never changed since it was
// written) keeps its last updated_at for the others, and so does a delete
// of such a record.
func TestSetRecordPayloadStampsTheFieldsItChanged(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		require.True(t, upsertOrder(t, db, `{"a":1,"b":2}`, t0))
		rec, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		v, h, err := models.CanonicalPayload([]byte(`{"a":1,"b":3}`))
		require.NoError(t, err)
		require.NoError(t, models.SetRecordPayload(db, rec, v, h, []string{"b"}, t0.Add(time.Minute), t0.Add(time.Hour)))
		require.Equal(t, map[string]time.Time{"a": t0, "b": t0.Add(time.Minute)}, fieldsAt(t, db, "1", "a", "b"))
		rec, err = models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Hour), rec.UpdatedAt.UTC(), "updated_at is when the record was written")

		require.NoError(t, db.Exec(`UPDATE records SET field_times = '{}', field_times_since = NULL`).Error) // as before 0033
		_, err = models.TombstoneRecords(db, []models.RecordKey{{LocalType: "order", LocalID: "1"}}, t0.Add(2*time.Hour))
		require.NoError(t, err)
		require.Equal(t, map[string]time.Time{"a": t0.Add(time.Hour), "b": t0.Add(time.Hour)}, fieldsAt(t, db, "1", "a", "b"),
			"the fields of a record without field times changed at the latest when it was last written before its delete")
	})
}

// In a batch, each record's fields are compared with its own last payload.
func TestABatchNotesEachRecordsOwnFieldTimes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		t1 := t0.Add(time.Minute)
		batch := func(at time.Time, payloads map[string]string) {
			var recs []models.RecordWrite
			for id, p := range payloads {
				v, h, err := models.CanonicalPayload([]byte(p))
				require.NoError(t, err)
				recs = append(recs, models.RecordWrite{RecordKey: models.RecordKey{LocalType: "order", LocalID: id}, Payload: v, Hash: h})
			}
			_, err := models.UpsertRecords(db, recs, at)
			require.NoError(t, err)
		}
		batch(t0, map[string]string{"1": `{"a":1,"b":1}`, "2": `{"a":1}`})
		batch(t1, map[string]string{"1": `{"a":2,"b":1}`, "2": `{"a":1,"b":1}`, "3": `{"a":1}`})
		require.Equal(t, map[string]time.Time{"a": t1, "b": t0}, fieldsAt(t, db, "1", "a", "b"))
		require.Equal(t, map[string]time.Time{"a": t0, "b": t1}, fieldsAt(t, db, "2", "a", "b"))
		require.Equal(t, map[string]time.Time{"a": t1}, fieldsAt(t, db, "3", "a"))
	})
}

// A payload holding a NUL (\u0000, which JSON allows and Postgres's jsonb
// refuses) is stored and changed like any other, its fields' times noted.
func TestAPayloadWithANulIsChangedLikeAnyOther(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
		require.True(t, upsertOrder(t, db, `{"a":"x\u0000y","b":1}`, t0))
		require.True(t, upsertOrder(t, db, `{"a":"x\u0000z","b":1}`, t0.Add(time.Minute)))
		require.Equal(t, map[string]time.Time{"a": t0.Add(time.Minute), "b": t0}, fieldsAt(t, db, "1", "a", "b"))
	})
}
