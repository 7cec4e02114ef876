package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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
	if dec.More() {
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
	rec := Record{LocalType: localType, LocalID: localID, Payload: payload, ContentHash: hash, CreatedAt: now, UpdatedAt: now}
	// The WHERE on the conflict update makes an unchanged payload a no-op,
	// and RowsAffected tells the two apart in one statement.
	res := tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "local_type"}, {Name: "local_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"payload", "content_hash", "updated_at"}),
		Where:     clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "records.content_hash <> excluded.content_hash"}}},
	}).Create(&rec)
	if res.Error != nil {
		return false, fmt.Errorf("upsert record %s/%s: %w", localType, localID, res.Error)
	}
	return res.RowsAffected > 0, nil
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

// ExistingRecords reports which of keys name a record, in one query.
func ExistingRecords(db *gorm.DB, keys []RecordKey) (map[RecordKey]bool, error) {
	have := make(map[RecordKey]bool, len(keys))
	if len(keys) == 0 {
		return have, nil
	}
	pairs := make([][]any, len(keys))
	for i, k := range keys {
		pairs[i] = []any{k.LocalType, k.LocalID}
	}
	var found []RecordKey
	if err := db.Model(&Record{}).Select("local_type, local_id").Where("(local_type, local_id) IN ?", pairs).
		Scan(&found).Error; err != nil {
		return nil, fmt.Errorf("look up %d records: %w", len(keys), err)
	}
	for _, k := range found {
		have[k] = true
	}
	return have, nil
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
