package models

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// MaxPayload bounds a record's JSON payload.
const MaxPayload = 256 << 10

// CanonicalPayload checks that raw is one JSON object and returns it in a
// canonical form (compact, keys sorted, numbers as written) with its SHA-256,
// so that the same content always hashes the same.
func CanonicalPayload(raw []byte) (string, string, error) {
	if len(raw) > MaxPayload {
		return "", "", Invalid(fmt.Sprintf("the payload is %d bytes; the limit is %d", len(raw), MaxPayload))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return "", "", Invalid("the payload must be a JSON object")
	}
	// More is false before a stray } or ]: only the end of the input
	// says nothing follows.
	if _, err := dec.Token(); err != io.EOF {
		return "", "", Invalid("the payload must be one JSON object, with nothing after it")
	}
	out, err := json.Marshal(obj) // encoding/json sorts map keys
	if err != nil {
		return "", "", Invalid("the payload cannot be encoded: " + err.Error())
	}
	sum := sha256.Sum256(out)
	return string(out), hex.EncodeToString(sum[:]), nil
}

// HashPayload returns the SHA-256 of a canonical payload.
func HashPayload(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:])
}

// UpsertRecord stores a record's payload. It reports changed=false, and
// writes nothing, when the stored content hash is already the same.
func UpsertRecord(tx *gorm.DB, localType, localID, payload, hash string, now time.Time) (bool, error) {
	changed, err := UpsertRecords(tx, []RecordWrite{{RecordKey{localType, localID}, payload, hash}}, now)
	return changed[RecordKey{localType, localID}], err
}

// RecordWrite is a record's canonical payload and its hash, to store.
type RecordWrite struct {
	RecordKey
	Payload, Hash string
}

// UpsertRecords stores records' payloads in one statement and returns the
// keys whose content changed: new records, records whose hash differs, and
// deleted records, which a write brings back to life (their tombstone
// cleared). A live record whose stored hash is already the same is not written. The keys
// must be distinct (Postgres refuses to update one row twice in a statement).
//
// The WHERE on the conflict update makes an unchanged payload a no-op, and
// RETURNING names only the rows inserted or updated: what changed is known
// from the write itself. The update also notes when the fields whose values
// it changed did (fieldTimesAfter), from the stored rows read first
// (storedForUpsert, which says what that read may miss); an insert writes
// no field times.
// Rows go in key order so that two batches with keys in common lock them in
// the same order and cannot deadlock on Postgres.
func UpsertRecords(tx *gorm.DB, recs []RecordWrite, now time.Time) (map[RecordKey]bool, error) {
	changed := make(map[RecordKey]bool, len(recs))
	if len(recs) == 0 {
		return changed, nil
	}
	sorted := slices.Clone(recs)
	slices.SortFunc(sorted, func(a, b RecordWrite) int { return a.RecordKey.compare(b.RecordKey) })
	prior, err := storedForUpsert(tx, sorted)
	if err != nil {
		return nil, err
	}
	var sql strings.Builder
	sql.WriteString("INSERT INTO records (local_type, local_id, payload, content_hash, field_times, created_at, updated_at) VALUES ")
	args := make([]any, 0, 7*len(sorted))
	for i, r := range sorted {
		if i > 0 {
			sql.WriteString(", ")
		}
		times := "{}"
		if p, ok := prior[r.RecordKey]; ok && (p.ContentHash != r.Hash || p.Deleted) {
			if times, err = fieldTimesAfter(p, r.Payload, now); err != nil {
				return nil, fmt.Errorf("record %s/%s: %w", r.LocalType, r.LocalID, err)
			}
		}
		sql.WriteString("(?, ?, ?, ?, ?, ?, ?)")
		args = append(args, r.LocalType, r.LocalID, r.Payload, r.Hash, times, now, now)
	}
	// Every SET reads the row as it was: field_times_since takes the
	// updated_at before this write (see ChangeTimes).
	sql.WriteString(` ON CONFLICT (local_type, local_id) DO UPDATE
		SET payload = excluded.payload, content_hash = excluded.content_hash, updated_at = excluded.updated_at, deleted_at = NULL,
			field_times = excluded.field_times, field_times_since = COALESCE(records.field_times_since, records.updated_at)
		WHERE records.content_hash <> excluded.content_hash OR records.deleted_at IS NOT NULL
		RETURNING local_type, local_id`)
	var written []RecordKey
	if err := tx.Raw(sql.String(), args...).Scan(&written).Error; err != nil {
		if len(recs) == 1 {
			return nil, fmt.Errorf("upsert record %s/%s: %w", recs[0].LocalType, recs[0].LocalID, err)
		}
		return nil, fmt.Errorf("upsert %d records: %w", len(recs), err)
	}
	for _, k := range written {
		changed[k] = true
	}
	return changed, nil
}

// RecordByKey finds a record by its local type and id.
func RecordByKey(db *gorm.DB, localType, localID string) (*Record, error) {
	var r Record
	err := db.Where("local_type = ? AND local_id = ?", localType, localID).Take(&r).Error
	return &r, notFound(err, "record "+localType+"/"+localID)
}

// AnyRecord reports whether there is a record at all, reading one index
// entry at most.
func AnyRecord(db *gorm.DB) (bool, error) {
	var ids []int64
	err := db.Model(&Record{}).Limit(1).Pluck("id", &ids).Error
	return len(ids) > 0, err
}

// RecordKey names a record.
type RecordKey struct{ LocalType, LocalID string }

func (k RecordKey) compare(o RecordKey) int {
	return cmp.Or(strings.Compare(k.LocalType, o.LocalType), strings.Compare(k.LocalID, o.LocalID))
}

// ExistingRecords reports which of keys name a record, live or deleted.
func ExistingRecords(db *gorm.DB, keys []RecordKey) (map[RecordKey]bool, error) {
	hashes, err := RecordHashes(db, keys)
	if err != nil {
		return nil, err
	}
	have := make(map[RecordKey]bool, len(hashes))
	for k := range hashes {
		have[k] = true
	}
	return have, nil
}

// RecordHashes returns the content hash of each of keys that names a
// record, live or deleted.
func RecordHashes(db *gorm.DB, keys []RecordKey) (map[RecordKey]string, error) {
	out := make(map[RecordKey]string, len(keys))
	for chunk := range slices.Chunk(keys, keysChunk) {
		with, args := keysTable(chunk)
		var found []struct {
			RecordKey
			ContentHash string
		}
		if err := db.Raw(with+` SELECT r.local_type, r.local_id, r.content_hash FROM records r
			JOIN k ON r.local_type = k.local_type AND r.local_id = k.local_id`, args...).Scan(&found).Error; err != nil {
			return nil, fmt.Errorf("read the hashes of %d records: %w", len(chunk), err)
		}
		for _, f := range found {
			out[f.RecordKey] = f.ContentHash
		}
	}
	return out, nil
}

// keysChunk is how many record keys one statement names: two parameters
// each, well within SQLite's and Postgres's bounds.
const keysChunk = 500

// keysTable is a WITH clause naming keys as the table k (local_type,
// local_id), and its arguments. Joined to records, each key is one lookup
// of the unique index, whatever plan Postgres keeps for the statement: a
// generic plan of an IN list of parameters compares every row of a type
// with every key (half a second for 1,000 keys among 20,000 records).
func keysTable(keys []RecordKey) (string, []any) {
	var q strings.Builder
	q.WriteString("WITH k (local_type, local_id) AS (VALUES ")
	args := make([]any, 0, 2*len(keys))
	for i, k := range keys {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?)")
		args = append(args, k.LocalType, k.LocalID)
	}
	q.WriteString(")")
	return q.String(), args
}

// RecordLinks returns every link of one record, by service.
func RecordLinks(db *gorm.DB, localType, localID string) ([]Link, error) {
	var out []Link
	return out, db.Where("local_type = ? AND local_id = ?", localType, localID).Order("external_service").Find(&out).Error
}

// LinkByID finds a link.
func LinkByID(db *gorm.DB, id int64) (*Link, error) {
	var l Link
	err := db.Take(&l, id).Error
	return &l, notFound(err, fmt.Sprintf("link %d", id))
}

// TombstoneRecords marks records deleted, in one statement, and returns the
// keys it marked: those of live records. A record already deleted keeps its
// first tombstone, and a key of no record is not in the answer either
// (ExistingRecords tells the two apart). Rows go in key order, as
// UpsertRecords takes them. A batch that upserts some records and deletes
// others takes its locks in two passes, so two such batches with records in
// common, in opposite roles, can still deadlock on Postgres: the one undone
// answers 503 to be sent again (models.Contended). A tombstone changes no
// field: the fields' times stay, field_times_since keeping the updated_at
// before it (see ChangeTimes).
func TombstoneRecords(tx *gorm.DB, keys []RecordKey, now time.Time) (map[RecordKey]bool, error) {
	marked := make(map[RecordKey]bool, len(keys))
	if len(keys) == 0 {
		return marked, nil
	}
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, RecordKey.compare)
	lock := ""
	if Dialect(tx) == Postgres {
		lock = " ORDER BY r.local_type, r.local_id FOR UPDATE OF r"
	}
	with, args := keysTable(sorted)
	var done []RecordKey
	err := tx.Raw(with+` UPDATE records SET deleted_at = ?, updated_at = ?, field_times_since = COALESCE(field_times_since, updated_at)
		WHERE deleted_at IS NULL AND id IN (SELECT r.id FROM records r JOIN k ON r.local_type = k.local_type AND r.local_id = k.local_id
			WHERE r.deleted_at IS NULL`+lock+`)
		RETURNING local_type, local_id`, append(args, now, now)...).Scan(&done).Error
	if err != nil {
		return nil, fmt.Errorf("delete %d records: %w", len(keys), err)
	}
	for _, k := range done {
		marked[k] = true
	}
	return marked, nil
}

// LinksOfRecords returns every link of the given records.
func LinksOfRecords(db *gorm.DB, keys []RecordKey) ([]Link, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	pairs := make([][]any, len(keys))
	for i, k := range keys {
		pairs[i] = []any{k.LocalType, k.LocalID}
	}
	var out []Link
	err := db.Where("(local_type, local_id) IN ?", pairs).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read the links of %d records: %w", len(keys), err)
	}
	return out, nil
}
