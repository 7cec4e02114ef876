package models

import (
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Status is where a link stands in its sync.
type Status string

// Link statuses.
const (
	StatusNew        Status = "new"        // to send
	StatusProcessing Status = "processing" // being sent, under a lease
	StatusSuccess    Status = "success"
	StatusRetry      Status = "retry"  // temporary failure, next attempt scheduled
	StatusFailed     Status = "failed" // permanent error, or attempts exhausted
	// StatusDeleted: the record was deleted and the provider no longer
	// holds its object (deleted, archived, or never created). Terminal,
	// like success, until the record is written again.
	StatusDeleted Status = "deleted"
)

// Statuses lists every status in the order pages show them.
var Statuses = []Status{StatusNew, StatusProcessing, StatusRetry, StatusFailed, StatusSuccess, StatusDeleted}

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Record is a local entity with its current payload.
type Record struct {
	ID          int64
	LocalType   string
	LocalID     string
	Payload     string // JSON
	ContentHash string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// DeletedAt is the record's tombstone: when it was deleted, nil while
	// it lives. Its links' desired state is then "deleted".
	DeletedAt *time.Time
	// FieldTimes (JSON) and FieldTimesSince say when each field last
	// changed: read them with ChangeTimes.
	FieldTimes      string `gorm:"default:'{}'"`
	FieldTimesSince *time.Time
}

// CreateKey is the idempotency key of the first create of a record's
// object, the same on every service: "order-12345-create". A type with a
// dash writes "order-line/7/create" instead, since "order-line-7-create"
// would be order line-7's key too, and a provider that replays keys (or
// holds them account-wide, as Stripe does) would answer one record's create
// with the other's object. No type or id holds a slash, so that form is no
// other record's, and keys already given keep their form.
func CreateKey(localType, localID string) string {
	if strings.Contains(localType, "-") {
		return localType + "/" + localID + "/create"
	}
	return localType + "-" + localID + "-create"
}

// Link is the external_map row of one record in one external service.
type Link struct {
	ID              int64
	LocalType       string
	LocalID         string
	ExternalService string
	ExternalKey     string // our stable key for the object, e.g. site_order_12345
	ExternalID      string // the provider's id, once known
	Status          Status
	Attempts        int
	NextAttemptAt   time.Time
	LeaseOwner      string
	LockedUntil     *time.Time
	// LeaseDeletes: the send under the lease is a delete (the record was
	// deleted when the link was claimed); a rescue hands the link back by it.
	LeaseDeletes bool
	NeedsLookup  bool // an earlier attempt may have reached the provider: look up before creating
	// DeleteUnknown: a delete of ours may have reached the provider (its
	// outcome is unknown), so an object found missing is ours to create
	// anew, not somebody else's deletion.
	DeleteUnknown   bool
	IdempotencyKey  string
	CreatePayload   string // the create's body, frozen at its first attempt
	LastError       string
	LastHTTPCode    int `gorm:"column:last_http_code"`
	PushedHash      string
	RemoteDeletedAt *time.Time // the provider said the object is gone; re-create needs an operator
	ErrorGroup      string     // service · HTTP code · message with ids and numbers stripped: failures that are the same problem
	// PutAsideAt, By and Reason: a person acknowledged this failed link; it
	// stays failed, off the Failed list. Cleared when the link leaves failed.
	PutAsideAt     *time.Time
	PutAsideBy     string
	PutAsideReason string
	// FailedAt is when the link last entered failed (a trigger sets it:
	// migrations 0030), nil for one that never failed. Other writes leave
	// it: a failed link keeps its age whatever touches it later.
	FailedAt *time.Time
	// TraceParent is the W3C traceparent of the request that last queued
	// the link's push ("" for none): its send's spans join that trace.
	TraceParent string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// TableName keeps the name the articles the product came from use.
func (Link) TableName() string { return "external_map" }

// Outcome classifies one outgoing call.
type Outcome string

// Attempt outcomes.
const (
	OutcomeOK        Outcome = "ok"
	OutcomeTemporary Outcome = "temporary"
	OutcomePermanent Outcome = "permanent"
	OutcomeAmbiguous Outcome = "ambiguous"
)

// Attempt is one outgoing call in the attempt log.
type Attempt struct {
	ID              int64
	LinkID          int64
	Number          int
	Operation       string
	IdempotencyKey  string
	HTTPCode        int `gorm:"column:http_code"`
	DurationMS      int64
	Outcome         Outcome
	ExternalID      string
	Error           string
	RequestExcerpt  string
	ResponseExcerpt string
	Worker          string
	CreatedAt       time.Time
}

// InProgress is the shared "a sync is running" row of one (service, type, id).
type InProgress struct {
	ExternalService string `gorm:"primaryKey"`
	LocalType       string `gorm:"primaryKey"`
	LocalID         string `gorm:"primaryKey"`
	Holder          string
	StartedBy       string
	StartedAt       time.Time
	ExpiresAt       time.Time
}

// TableName is the in_progress table.
func (InProgress) TableName() string { return "in_progress" }

// progressKey is the (service, type, id) an in_progress row stands for: a
// link's, whichever of its records' links it is.
type progressKey [3]string

func (l *Link) progressKey() progressKey {
	return progressKey{l.ExternalService, l.LocalType, l.LocalID}
}

func (r *InProgress) progressKey() progressKey {
	return progressKey{r.ExternalService, r.LocalType, r.LocalID}
}

// requestsOf selects the Sync now requests of keys, expired or not.
func requestsOf(tx *gorm.DB, keys []progressKey) *gorm.DB {
	in := make([][]any, len(keys))
	for i, k := range keys {
		in[i] = []any{k[0], k[1], k[2]}
	}
	return tx.Where("holder = ? AND (external_service, local_type, local_id) IN ?", RequestHolder, in)
}

// ProcessedEvent is an accepted webhook.
type ProcessedEvent struct {
	Provider        string `gorm:"primaryKey"`
	EventID         string `gorm:"primaryKey"`
	EventType       string
	ReceivedAt      time.Time
	Outcome         string
	Error           string
	Duplicates      int
	LastDuplicateAt *time.Time
	Payload         string
	// LinkID is the link the event's effect found (see NoteEventLink); nil
	// when it named none, and for events stored before the column.
	LinkID *int64
}

// ReconciliationRun is one comparison of a service with our links.
type ReconciliationRun struct {
	ID          int64
	Service     string
	Status      string
	DryRun      bool
	TriggeredBy string
	Owner       string
	HeartbeatAt *time.Time
	Expected    int64
	Scanned     int64
	Fixed       int64
	Error       string
	StartedAt   time.Time
	FinishedAt  *time.Time
	// ConfirmedBy and ConfirmedAt say who let a run past its safety valve.
	ConfirmedBy string
	ConfirmedAt *time.Time
	// Listed is how many objects the listing met (Scanned counts them and
	// the records compared together); nil for runs before it was kept.
	Listed *int64
	// AppliedBy and AppliedAt say who applied a dry run's open fixes.
	AppliedBy string
	AppliedAt *time.Time
}

// Discrepancy is one difference a reconciliation run found.
type Discrepancy struct {
	ID          int64
	RunID       int64
	Kind        string
	Status      string
	LocalType   string
	LocalID     string
	ExternalKey string
	ExternalIDs string
	LinkID      *int64
	Detail      string
	CreatedAt   time.Time
	// Differences are the values of the fields that differ, as JSON (see
	// FieldDifference); "" for the other kinds.
	Differences string
	// Resolution is what a person did with a discrepancy waiting for one
	// (ResolvedLinked, ResolvedKept, ResolvedDismissed); "" until then.
	Resolution     string
	ResolutionNote string
	ResolvedBy     string
	ResolvedAt     *time.Time
}

// LinkFilter narrows a list of links; empty fields match everything.
type LinkFilter struct {
	Service  string
	Status   Status
	BeforeID int64 // keyset cursor: links with a smaller id
	Limit    int
}

// ListLinks returns links newest first (by id), at most Limit of them.
func ListLinks(db *gorm.DB, f LinkFilter) ([]Link, error) {
	q := db.Model(&Link{})
	if f.Service != "" {
		q = q.Where("external_service = ?", f.Service)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.BeforeID > 0 {
		q = q.Where("id < ?", f.BeforeID)
	}
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	var out []Link
	return out, q.Order("id DESC").Limit(f.Limit).Find(&out).Error
}

// StatusCount is the number of links of one service in one status.
type StatusCount struct {
	Service string
	Status  Status
	N       int64
}

// CountLinksByStatus counts links per service and status.
func CountLinksByStatus(db *gorm.DB) ([]StatusCount, error) {
	var out []StatusCount
	err := db.Model(&Link{}).Select("external_service AS service, status, COUNT(*) AS n").
		Group("external_service, status").Order("external_service, status").Scan(&out).Error
	return out, err
}
