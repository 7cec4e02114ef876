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
// on (run_id, external_id) and DO NOTHING drop the repeat.
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

// CompareRow is one record of a compare batch with its link for the
// service and one object listed under its key; a record with several such
// objects comes as several rows, a record with none as one row with no Seen*.
type CompareRow struct {
	RecordID       int64
	LocalType      string
	LocalID        string
	Payload        string
	ContentHash    string
	LinkID         *int64
	LinkStatus     *string
	LinkExternalID *string
	LinkKey        *string
	LinkLastError  *string
	LinkDeleted    bool // the provider said the object was deleted: re-creating is an operator's call
	LinkMoved      bool // the link changed since the run began: the listing may predate it
	LinkIDSeen     bool // an object with the link's external id was listed, under any key
	SeenID         *string
	SeenKey        *string
	SeenFields     *string
}

// CompareBatch returns the next limit records of types (by id, after
// afterID) with their link to service and the objects run listed for them,
// ordered by record. since is the run's start: links updated since are
// flagged LinkMoved.
func CompareBatch(db *gorm.DB, runID int64, service string, types []string, afterID int64, limit int, since time.Time) ([]CompareRow, error) {
	var rows []CompareRow
	err := db.Raw(`SELECT r.id AS record_id, r.local_type, r.local_id, r.payload, r.content_hash,
			l.id AS link_id, l.status AS link_status, l.external_id AS link_external_id, l.external_key AS link_key,
			l.last_error AS link_last_error,
			COALESCE(l.remote_deleted_at IS NOT NULL, FALSE) AS link_deleted,
			COALESCE(l.updated_at >= ?, FALSE) AS link_moved,
			EXISTS (SELECT 1 FROM reconcile_seen b WHERE b.run_id = ? AND b.external_id = l.external_id) AS link_id_seen,
			s.external_id AS seen_id, s.external_key AS seen_key, s.fields AS seen_fields
		FROM (SELECT id, local_type, local_id, payload, content_hash FROM records
			WHERE local_type IN ? AND id > ? ORDER BY id LIMIT ?) r
		LEFT JOIN external_map l ON l.local_type = r.local_type AND l.local_id = r.local_id AND l.external_service = ?
		LEFT JOIN reconcile_seen s ON s.run_id = ? AND s.local_type = r.local_type AND s.local_id = r.local_id
		ORDER BY r.id, s.id`,
		since, runID, types, afterID, limit, service, runID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("compare batch after record %d: %w", afterID, err)
	}
	return rows, nil
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
