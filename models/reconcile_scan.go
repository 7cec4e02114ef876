package models

import (
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Seen is one provider object a run has listed, in the run's scratch table
// reconcile_seen: the record its key names, and its fields as JSON.
type Seen struct {
	ID          int64
	RunID       int64
	LocalType   string
	LocalID     string
	ExternalKey string
	ExternalID  string
	Fields      string
}

// TableName is the scratch table.
func (Seen) TableName() string { return "reconcile_seen" }

// InsertSeen stores a page of listed objects. An object listed twice (a
// provider's pages shifted under the cursor) is kept once: the unique index
// on (run_id, local_type, external_id) and DO NOTHING drop the repeat. Two
// endpoints' objects with the same id (HubSpot's contacts and companies)
// are of different types, and both kept.
func InsertSeen(db *gorm.DB, rows []Seen) error {
	if len(rows) == 0 {
		return nil
	}
	err := db.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(rows, 500).Error
	if err != nil {
		return fmt.Errorf("store %d listed objects: %w", len(rows), err)
	}
	return nil
}

// Finding is a discrepancy as a run writes it, with what its fix must find
// unchanged: the link's external id when the run looked (LinkExternalID)
// and, for an adoption, the record content hash the remote object already
// holds (RecordHash, "" when it differs).
type Finding struct {
	ID             int64
	RunID          int64
	Kind           string
	Status         string
	LocalType      string
	LocalID        string
	ExternalKey    string
	ExternalIDs    string
	LinkID         *int64
	LinkExternalID string
	RecordHash     string
	Detail         string
	CreatedAt      time.Time
	Differences    string // JSON of []FieldDifference
}

// TableName is the discrepancies table.
func (Finding) TableName() string { return "discrepancies" }

// InsertFindings stores a batch of discrepancies.
func InsertFindings(db *gorm.DB, fs []Finding) error {
	if len(fs) == 0 {
		return nil
	}
	if err := db.CreateInBatches(fs, 200).Error; err != nil {
		return fmt.Errorf("store %d discrepancies: %w", len(fs), err)
	}
	return nil
}

// CompareBatch is one batch of the compare phase: records of one type, a
// run of local ids, with their links to the service and the objects listed
// under their keys.
type CompareBatch struct {
	Records []Record // by local id
	Links   []Link   // the records' links to the service
	Seen    []Seen   // the objects listed under the records' keys, by local id, then id
}

// LoadCompareBatch reads the next limit records of localType (by local id,
// after afterID), then their links and listed objects by the same range of
// local ids. Three range scans along (local_type, local_id) indexes rather
// than one join: a planner that sees one run_id and one service in every row
// would otherwise hash-join whole tables for each batch.
func LoadCompareBatch(db *gorm.DB, runID int64, service, localType, afterID string, limit int) (*CompareBatch, error) {
	b := &CompareBatch{}
	err := db.Select("id, local_type, local_id, payload, content_hash, deleted_at").
		Where("local_type = ? AND local_id > ?", localType, afterID).Order("local_type, local_id").Limit(limit).Find(&b.Records).Error
	if err != nil || len(b.Records) == 0 {
		return b, wrapErr(err, "read records to compare")
	}
	lo, hi := b.Records[0].LocalID, b.Records[len(b.Records)-1].LocalID
	err = db.Select("id, local_type, local_id, status, external_id, external_key, last_error, remote_deleted_at, updated_at").
		Where("local_type = ? AND local_id BETWEEN ? AND ? AND external_service = ?", localType, lo, hi, service).Find(&b.Links).Error
	if err != nil {
		return nil, wrapErr(err, "read links to compare")
	}
	err = db.Where("run_id = ? AND local_type = ? AND local_id BETWEEN ? AND ?", runID, localType, lo, hi).
		Order("local_id, id").Find(&b.Seen).Error
	return b, wrapErr(err, "read listed objects to compare")
}

// SeenIDs returns which of ids a run listed under any key of types: the
// local types one list endpoint returns, whose objects share their ids.
func SeenIDs(db *gorm.DB, runID int64, types, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	var found []string
	err := db.Model(&Seen{}).Where("run_id = ? AND local_type IN ? AND external_id IN ?", runID, types, ids).Pluck("external_id", &found).Error
	for _, id := range found {
		out[id] = true
	}
	return out, wrapErr(err, "look up listed ids")
}

func wrapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// RemoteOnly is a key the provider has objects for and we have no record of.
type RemoteOnly struct {
	LocalType   string
	LocalID     string
	ExternalKey string
	N           int64
	ExternalIDs string // comma-separated
}

// RemoteOnlyBatch returns the next limit keys (ordered by local type and id,
// after the given pair) that run listed objects for but that name no record.
func RemoteOnlyBatch(db *gorm.DB, runID int64, afterType, afterID string, limit int) ([]RemoteOnly, error) {
	agg := "group_concat(s.external_id, ',')"
	if Dialect(db) == Postgres {
		agg = "string_agg(s.external_id, ',' ORDER BY s.external_id)"
	}
	var out []RemoteOnly
	err := db.Raw(`SELECT s.local_type, s.local_id, MIN(s.external_key) AS external_key, COUNT(*) AS n, `+agg+` AS external_ids
		FROM reconcile_seen s
		WHERE s.run_id = ? AND (s.local_type > ? OR (s.local_type = ? AND s.local_id > ?))
		AND NOT EXISTS (SELECT 1 FROM records r WHERE r.local_type = s.local_type AND r.local_id = s.local_id)
		GROUP BY s.local_type, s.local_id ORDER BY s.local_type, s.local_id LIMIT ?`,
		runID, afterType, afterType, afterID, limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("objects without a record: %w", err)
	}
	return out, nil
}

// CountRecords counts the records of the given types.
func CountRecords(db *gorm.DB, types []string) (int64, error) {
	var n int64
	return n, db.Model(&Record{}).Where("local_type IN ?", types).Count(&n).Error
}

// CountRemoteLinks counts a service's links of the given types that point
// at a remote object: the best estimate of how many objects a listing meets.
func CountRemoteLinks(db *gorm.DB, service string, types []string) (int64, error) {
	var n int64
	return n, db.Model(&Link{}).Where("external_service = ? AND local_type IN ? AND external_id <> ''", service, types).Count(&n).Error
}
