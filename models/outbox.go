package models

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// LinkSpec is a link a record must have: one per routed service.
type LinkSpec struct {
	RecordKey                            // the record; EnsureLinks sets it
	Service, ExternalKey, IdempotencyKey string
	// TraceParent is the queueing request's W3C traceparent, "" for none.
	TraceParent string
}

// linkChunk bounds the links one statement writes: a link binds 24 values,
// and SQLite takes at most 32,766 in a statement (Postgres 65,535).
const linkChunk = 1000

// EnsureLinks makes sure a record has a link per spec and queues each for a
// push, as QueueLinks does.
func EnsureLinks(tx *gorm.DB, localType, localID string, specs []LinkSpec, now time.Time) error {
	specs = slices.Clone(specs)
	for i := range specs {
		specs[i].RecordKey = RecordKey{localType, localID}
	}
	return QueueLinks(tx, specs, now)
}

// QueueLinks makes sure there is a link per spec and queues each for a
// push: new links start as new; finished ones (success, failed, deleted) go
// back to new with a fresh attempt count. Links that are waiting or being sent keep
// their state: the send reads the latest payload, and a link finished with an
// older payload is re-queued by FinishLink. It writes up to linkChunk links
// per statement, in key order, so that two batches with records in common
// lock their links in the same order and cannot deadlock on Postgres.
//
// The unique index on (local_type, local_id, external_service) and ON
// CONFLICT make this safe against concurrent callers: never a second link.
func QueueLinks(tx *gorm.DB, specs []LinkSpec, now time.Time) error {
	links := make([]Link, len(specs))
	for i, s := range specs {
		links[i] = Link{LocalType: s.LocalType, LocalID: s.LocalID, ExternalService: s.Service, ExternalKey: s.ExternalKey,
			IdempotencyKey: s.IdempotencyKey, Status: StatusNew, NextAttemptAt: now, TraceParent: s.TraceParent, CreatedAt: now, UpdatedAt: now}
	}
	slices.SortFunc(links, func(a, b Link) int {
		return cmp.Or(RecordKey{a.LocalType, a.LocalID}.compare(RecordKey{b.LocalType, b.LocalID}),
			strings.Compare(a.ExternalService, b.ExternalService))
	})
	finished := "external_map.status IN ('success', 'failed', 'deleted')"
	upsert := clause.OnConflict{
		Columns: []clause.Column{{Name: "local_type"}, {Name: "local_id"}, {Name: "external_service"}},
		DoUpdates: clause.Set{
			{Column: clause.Column{Name: "status"}, Value: gorm.Expr("CASE WHEN " + finished + " THEN 'new' ELSE external_map.status END")},
			{Column: clause.Column{Name: "attempts"}, Value: gorm.Expr("CASE WHEN " + finished + " THEN 0 ELSE external_map.attempts END")},
			{Column: clause.Column{Name: "next_attempt_at"}, Value: gorm.Expr("CASE WHEN " + finished + " THEN excluded.next_attempt_at ELSE external_map.next_attempt_at END")},
			{Column: clause.Column{Name: "updated_at"}, Value: gorm.Expr("excluded.updated_at")},
			// The latest request's: the next send pushes its payload.
			{Column: clause.Column{Name: "trace_parent"}, Value: gorm.Expr("excluded.trace_parent")},
		},
	}
	for chunk := range slices.Chunk(links, linkChunk) {
		if err := tx.Clauses(upsert).Create(&chunk).Error; err != nil {
			return fmt.Errorf("queue %d links: %w", len(chunk), err)
		}
	}
	return nil
}

// ClaimedLink is a link as claimed, with its record's current payload and
// content hash ("" when the record is gone), and whether a person asked for
// this sync (Sync now): the finish releases their request. The link's
// LeaseDeletes says whether the record is deleted: then the link's desired
// state is "deleted".
type ClaimedLink struct {
	Link        `gorm:"embedded"`
	Payload     string
	ContentHash string
	Requested   bool
}

// DeletedHash stands for a deleted record's state where a content hash is
// compared: the pushed hash of a delete, which FinishLinks checks against
// the record as it does an update's. Never a SHA-256 in hex.
const DeletedHash = "deleted"

// ClaimDue takes up to limit due links (new or retry, next attempt reached)
// for one worker: status processing, lease owner and expiry set, the create
// body frozen on links that have no remote object yet. The lease columns are
// what marks a link in progress: no in_progress row is written, which keeps
// a table's insert and delete per link off the engine's hot path; that table
// holds the Sync now requests alone. Services in skip are not claimed. The same statement returns
// each link's record, which saves the sender a query (and, on a busy
// machine, a wait for the claimer to be scheduled again) per batch.
//
// On Postgres, FOR UPDATE SKIP LOCKED lets several instances claim at once
// without ever handing one link to two of them; on SQLite the single UPDATE …
// RETURNING runs under the database's one write lock, which does the same.
func ClaimDue(db *gorm.DB, owner string, now time.Time, lease time.Duration, limit int, skip []string) ([]ClaimedLink, error) {
	if len(skip) == 0 {
		return claimDue(db, owner, now, lease, limit, "")
	}
	return claimDue(db, owner, now, lease, limit, " AND external_service NOT IN ?", skip)
}

// ClaimDueOf claims up to limit due links of service alone, paused or not:
// a probe of a paused service's provider sends one.
func ClaimDueOf(db *gorm.DB, owner string, now time.Time, lease time.Duration, service string, limit int) ([]ClaimedLink, error) {
	return claimDue(db, owner, now, lease, limit, " AND external_service = ?", service)
}

// claimDue claims the due links that filter (SQL and its arguments) keeps.
func claimDue(db *gorm.DB, owner string, now time.Time, lease time.Duration, limit int, filter string, filterArgs ...any) ([]ClaimedLink, error) {
	var claimed []ClaimedLink
	err := db.Transaction(func(tx *gorm.DB) error {
		args := []any{StatusProcessing, owner, now.Add(lease), now, now}
		args = append(args, filterArgs...)
		args = append(args, limit)
		q := claimSQLite(filter)
		if Dialect(tx) == Postgres {
			q = claimPostgres(filter)
		}
		if err := tx.Raw(q, args...).Scan(&claimed).Error; err != nil {
			return fmt.Errorf("claim due links: %w", err)
		}
		if len(claimed) == 0 {
			return nil
		}
		return markRequested(tx, claimed)
	})
	return claimed, err
}

// claimPostgres is the claim on Postgres: the due links are locked (FOR
// UPDATE SKIP LOCKED, so that instances claiming at once never share one)
// and joined to their records once, and the update freezes the create body
// and returns each link with what the send needs of its record.
func claimPostgres(filter string) string {
	return `UPDATE external_map m SET status = ?, lease_owner = ?, locked_until = ?, updated_at = ?,
		create_payload = CASE WHEN m.external_id = '' AND m.create_payload = '' THEN c.payload ELSE m.create_payload END,
		lease_deletes = c.record_deleted
	FROM (SELECT d.id, COALESCE(r.payload, '') AS payload, COALESCE(r.content_hash, '') AS content_hash,
			r.deleted_at IS NOT NULL AS record_deleted
		FROM (` + dueSQL(Postgres, "id, local_type, local_id") + filter + `
			ORDER BY next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED) d
		LEFT JOIN records r ON r.local_type = d.local_type AND r.local_id = d.local_id) c
	WHERE m.id = c.id
	RETURNING m.*, c.payload, c.content_hash`
}

// claimSQLite is the claim on SQLite, whose one write lock keeps claimers
// apart. Its RETURNING may name only the updated table, so each record
// column is a subquery of its own.
func claimSQLite(filter string) string {
	record := func(value, none string) string {
		return `COALESCE((SELECT ` + value + ` FROM records r WHERE r.local_type = external_map.local_type
			AND r.local_id = external_map.local_id), ` + none + `)`
	}
	return `UPDATE external_map SET status = ?, lease_owner = ?, locked_until = ?, updated_at = ?,
		create_payload = CASE WHEN external_map.external_id = '' AND external_map.create_payload = ''
			THEN ` + record("r.payload", "''") + ` ELSE external_map.create_payload END,
		lease_deletes = ` + record("r.deleted_at IS NOT NULL", "false") + `
		WHERE id IN (` + dueSQL(SQLite, "id") + filter + ` ORDER BY next_attempt_at LIMIT ?)
		RETURNING *, ` + record("r.payload", "''") + ` AS payload, ` + record("r.content_hash", "''") + ` AS content_hash`
}

// markRequested sets Requested on the claimed links a Sync now request
// stands for. It is a statement of its own, after the claim's: on Postgres
// the claim reads with the snapshot it started with, and a request that
// committed while it waited for a link's lock would be missed there. A
// request not committed yet is refused instead: its update of the link
// waits for this claim, then finds the link being sent.
func markRequested(tx *gorm.DB, claimed []ClaimedLink) error {
	keys := make([]progressKey, len(claimed))
	for i := range claimed {
		keys[i] = claimed[i].progressKey()
	}
	asked := map[progressKey]bool{}
	for chunk := range slices.Chunk(keys, linkChunk) {
		var rows []InProgress
		if err := requestsOf(tx, chunk).Find(&rows).Error; err != nil {
			return fmt.Errorf("read the Sync now requests of %d claimed links: %w", len(chunk), err)
		}
		for _, r := range rows {
			asked[r.progressKey()] = true
		}
	}
	for i := range claimed {
		claimed[i].Requested = asked[keys[i]]
	}
	return nil
}

// RequestHolder holds the in_progress row of a Sync now request.
const RequestHolder = "request"

// dueSQL selects cols of the due links; the caller adds the order and limit. The statuses
// are literals, not parameters, so that the planner can prove the partial
// index external_map_due_idx applies (a Postgres generic plan over
// parameters cannot, and falls back to sorting every waiting link at each
// claim). SQLite, without statistics, still prefers the status index and a
// sort, hence INDEXED BY.
func dueSQL(dialect, cols string) string {
	return `SELECT ` + cols + ` FROM ` + indexedBy(dialect, "external_map", "external_map_due_idx") + ` WHERE status IN ('new', 'retry') AND next_attempt_at <= ?`
}

// LinkOutcome is what a send decided for one link.
type LinkOutcome struct {
	Link       Link   // as claimed (ID, lease owner, key)
	Status     Status // success, deleted, retry or failed
	ExternalID string
	PushedHash string // success: the hash of what the provider now holds; deleted: DeletedHash
	// CreateBody, when set, is the body of the create this send made,
	// frozen from now on for the create's later attempts in place of the
	// one frozen at the claim (see outbox's sender: a create that sends the
	// record as it now is, or a recreate, which the claim froze nothing for).
	CreateBody string
	// SentFor is the record's state this send was for: its content hash
	// as claimed, or DeletedHash for a delete; "" when the send made no
	// call for the record (a link no longer routed). A failure of a state
	// the record has left since goes back to new, with fresh attempts: the
	// record is sent again as what it now wants.
	SentFor string
	// NextKey, when set, is the link's idempotency key from now on: after
	// a delete done, the key of the create that a write of the record
	// after its delete sends (the old one would replay the deleted
	// object's create), or the key such a create was sent with.
	NextKey     string
	Attempts    int
	NextAttempt time.Time
	NeedsLookup bool
	// DeleteUnknown: a delete sent may have reached the provider; see
	// Link.DeleteUnknown.
	DeleteUnknown bool
	// ObjectGone: the object the link names is known to be gone (an update
	// found none, nor did a lookup by key); short of a success, the link
	// forgets it, so that what follows looks for the object a lost create
	// may have made instead.
	ObjectGone bool
	// DeletedObject is the object a delete done removed when the link did
	// not name it (a lookup by our key found it, or the replayed create
	// named it): the link gives it up as it gives up the object it names.
	DeletedObject string
	LastError     string
	LastHTTP      int
	Calls         []Attempt
	// Requested says the send answered a Sync now request: the finish
	// releases its in_progress row.
	Requested bool
}

// FinishLinks writes a batch of outcomes in one transaction: the attempts,
// each link's new state, and the release of the Sync now requests they
// answered. A link whose
// lease was taken away meanwhile (rescued, then claimed again) keeps its new
// owner's state; its attempts are still logged, because they happened.
//
// A success whose pushed hash no longer matches the record goes back to new:
// the payload changed while it was being sent. So does a delete done whose
// record was written again meanwhile, and a success whose record was
// deleted meanwhile: the push goes again, as what the record now wants.
func FinishLinks(db *gorm.DB, outcomes []LinkOutcome, now time.Time) (stale int, err error) {
	if len(outcomes) == 0 {
		return 0, nil
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		if err := shareRecords(tx, outcomes); err != nil {
			return err
		}
		var calls []Attempt
		for _, o := range outcomes {
			calls = append(calls, o.Calls...)
		}
		if len(calls) > 0 {
			if err := tx.CreateInBatches(calls, 500).Error; err != nil {
				return fmt.Errorf("log attempts: %w", err)
			}
		}
		var written []int64
		for start := 0; start < len(outcomes); start += finishChunk {
			chunk := outcomes[start:min(start+finishChunk, len(outcomes))]
			ids, err := finishChunkLinks(tx, chunk, now)
			if err != nil {
				return err
			}
			stale += len(chunk) - len(ids)
			written = append(written, ids...)
		}
		if err := giveUpGoneObjects(tx, outcomes, written, now); err != nil {
			return err
		}
		return releaseInProgress(tx, outcomes)
	})
	return stale, err
}

// shareRecords holds the batch's records still until the outcomes are
// committed (Postgres; SQLite runs one writer at a time anyway). A success
// goes back to new when its record changed meanwhile, and that check reads
// the record: under READ COMMITTED it could read a version older than one a
// writer commits while the finish waits on a link row, or commit after a
// webhook's requeue skipped the link as still processing — either way the
// change would never be pushed. With the records held, a writer waits for
// the finish and then sees the link finished, and a finish that waited for a
// writer reads its version: every statement after this one sees it.
func shareRecords(tx *gorm.DB, outcomes []LinkOutcome) error {
	if Dialect(tx) != Postgres {
		return nil
	}
	keys := make([]string, 0, len(outcomes))
	args := make([]any, 0, 2*len(outcomes))
	for _, o := range outcomes {
		keys = append(keys, "(?::text, ?::text)")
		args = append(args, o.Link.LocalType, o.Link.LocalID)
	}
	// In key order, as every finisher takes them.
	err := tx.Exec(`SELECT 1 FROM records r JOIN (VALUES `+strings.Join(keys, ", ")+`) AS k (local_type, local_id)
		ON r.local_type = k.local_type AND r.local_id = k.local_id
		ORDER BY r.local_type, r.local_id FOR SHARE OF r`, args...).Error
	if err != nil {
		return fmt.Errorf("hold the records of %d outcomes: %w", len(outcomes), err)
	}
	return nil
}

// finishChunk bounds the links written by one statement (17 parameters each).
const finishChunk = 500

// finishChunkLinks writes the new state of every link in one UPDATE … FROM a
// list of values, and returns the ids of the links it changed. A round trip
// per link is what would otherwise bound the engine's rate on Postgres.
//
// The WHERE is the compare-and-set on status and lease owner: only the
// worker that holds the lease may write the link's outcome.
func finishChunkLinks(tx *gorm.DB, outcomes []LinkOutcome, now time.Time) ([]int64, error) {
	// Postgres types a VALUES list from its contents; parameters have none.
	row := "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	if Dialect(tx) == Postgres {
		row = "(?::bigint, ?::text, ?::text, ?::text, ?::text, ?::integer, ?::timestamptz, ?::boolean, ?::boolean, ?::boolean, ?::text, ?::integer, ?::text, ?::text, ?::text, ?::text, ?::text)"
	}
	var values strings.Builder
	args := make([]any, 0, 17*len(outcomes)+1)
	for i, o := range outcomes {
		if i > 0 {
			values.WriteString(", ")
		}
		values.WriteString(row)
		args = append(args, o.Link.ID, o.Link.LeaseOwner, string(o.Status), o.ExternalID, o.PushedHash,
			o.Attempts, o.NextAttempt, o.NeedsLookup, o.DeleteUnknown, o.ObjectGone, o.LastError, o.LastHTTP, errorGroupOf(o), o.Link.TraceParent, o.NextKey,
			o.SentFor, o.CreateBody)
	}
	args = append(args, now)
	var ids []int64
	err := tx.Raw(`WITH v (id, owner, status, external_id, pushed_hash, attempts, next_attempt_at, needs_lookup, delete_unknown, object_gone, last_error, last_http_code, error_group, trace_parent, next_key, sent_for, create_body)
		AS (VALUES `+values.String()+`)
		UPDATE external_map SET `+finishSet+`
		FROM v WHERE external_map.id = v.id AND external_map.status = 'processing' AND external_map.lease_owner = v.owner
		RETURNING external_map.id`,
		args...).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("finish %d links: %w", len(outcomes), err)
	}
	return ids, nil
}

// giveUpGoneObjects keeps, as objects their links gave up, the objects
// the links named as claimed that the outcomes found gone (ObjectGone: an
// update's 404, and no object under our key) or deleted (a delete done, of
// the object the link named or of the one it found, DeletedObject),
// of the links the finish wrote (written): a link whose lease was taken
// away keeps its new owner's state, and with it its object. The link,
// re-created (or once its record is written again), no longer names the
// old object, and a late event about it, which carries our key, must not
// find the link waiting for an id to adopt — or mark it deleted, for our
// own delete coming back. Most batches gave up none, and cost no
// statement.
func giveUpGoneObjects(tx *gorm.DB, outcomes []LinkOutcome, written []int64, now time.Time) error {
	for _, o := range outcomes {
		object := o.Link.ExternalID
		if object == "" && o.Status == StatusDeleted {
			object = o.DeletedObject
		}
		gone := o.ObjectGone || o.Status == StatusDeleted
		if !gone || object == "" || !slices.Contains(written, o.Link.ID) {
			continue
		}
		if err := giveUpObject(tx, o.Link.ID, object, now); err != nil {
			return err
		}
	}
	return nil
}

// finishSet is the new state of a finished link: a success records the
// remote object and the hash pushed, drops the frozen create body and resets
// the attempt count — and goes back to new when the record's state (its
// content hash, or DeletedHash once it is deleted) is no longer the one
// pushed (or the record is gone). A failure goes back to new, with fresh
// attempts, when the record has left the state that was sent (SentFor): it
// was written or deleted during the send, and what it now wants has not
// been tried (a fix of the data a 422 refused, say). A delete done forgets
// the object, which the provider no longer holds, and with it the mark of
// an object deleted at the provider: a write of the record afterwards
// creates a new object, which nobody deleted. So does an outcome whose object is known gone
// (ObjectGone), short of a success. A success drops that mark too: the
// object it reached, or the one it made, is there (one made after a
// remote deletion would otherwise keep the mark, and its webhooks be
// ignored as about a deleted object). A create body given (CreateBody) is
// frozen in place of the link's. A next key given becomes the link's. A
// link done with (success, deleted or failed) forgets the trace its send
// was claimed with, so that a later push queued without one (a webhook's, a
// fix's, a retry by hand) does not join an old request's trace; one a newer
// request set meanwhile stays, for the push that request queued. A retry
// keeps it: it is the same send. The lease goes, and with it what it was
// sending (lease_deletes): a worker of an earlier version, which claims
// without setting it, must not leave a rescuer reading this send's.
const finishSet = `status = CASE WHEN v.status = 'failed' AND ` + sentStale + ` THEN 'new'
		WHEN v.status NOT IN ('success', 'deleted') THEN v.status
		WHEN ` + recordState + ` = v.pushed_hash THEN v.status ELSE 'new' END,
	attempts = CASE WHEN v.status IN ('success', 'deleted') OR (v.status = 'failed' AND ` + sentStale + `) THEN 0 ELSE v.attempts END,
	external_id = CASE WHEN v.status = 'success' THEN v.external_id WHEN v.status = 'deleted' OR v.object_gone THEN '' ELSE external_map.external_id END,
	pushed_hash = CASE WHEN v.status = 'success' THEN v.pushed_hash WHEN v.status = 'deleted' OR v.object_gone THEN '' ELSE external_map.pushed_hash END,
	create_payload = CASE WHEN v.status IN ('success', 'deleted') THEN '' WHEN v.create_body <> '' THEN v.create_body
		ELSE external_map.create_payload END,
	remote_deleted_at = CASE WHEN v.status IN ('success', 'deleted') OR v.object_gone THEN NULL ELSE external_map.remote_deleted_at END,
	idempotency_key = CASE WHEN v.next_key <> '' THEN v.next_key ELSE external_map.idempotency_key END,
	next_attempt_at = v.next_attempt_at, needs_lookup = v.needs_lookup, delete_unknown = v.delete_unknown, last_error = v.last_error,
	last_http_code = v.last_http_code, error_group = v.error_group, lease_owner = '', locked_until = NULL, lease_deletes = FALSE, updated_at = ?,
	trace_parent = CASE WHEN v.status IN ('success', 'deleted', 'failed') AND external_map.trace_parent = v.trace_parent THEN ''
		ELSE external_map.trace_parent END`

// recordState is the state of a finishing link's record: its content hash,
// DeletedHash once deleted, NULL when the record is gone.
const recordState = `(SELECT CASE WHEN r.deleted_at IS NULL THEN r.content_hash ELSE '` + DeletedHash + `' END FROM records r
	WHERE r.local_type = external_map.local_type AND r.local_id = external_map.local_id)`

// sentStale holds when the record has moved on from the state the send was
// for. A record gone (NULL) is not: there is nothing to send again.
const sentStale = `(v.sent_for <> '' AND ` + recordState + ` <> v.sent_for)`

// errorGroupOf fingerprints a failure, so the failed page can group it.
func errorGroupOf(o LinkOutcome) string {
	if o.Status != StatusFailed {
		return ""
	}
	return ErrorGroup(o.Link.ExternalService, o.LastHTTP, o.LastError)
}

// releaseInProgress deletes the Sync now requests that outcomes answered:
// those made before the claim of their send (the link's updated_at as
// claimed). A request made later, after a rescue handed the link back, waits
// for the send that answers it. Most outcomes answered none, and cost no
// statement.
func releaseInProgress(tx *gorm.DB, outcomes []LinkOutcome) error {
	var conds []string
	var args []any
	for _, o := range outcomes {
		if o.Requested {
			conds = append(conds, "(external_service = ? AND local_type = ? AND local_id = ? AND started_at <= ?)")
			args = append(args, o.Link.ExternalService, o.Link.LocalType, o.Link.LocalID, o.Link.UpdatedAt)
		}
	}
	if len(conds) == 0 {
		return nil
	}
	return tx.Where("holder = ? AND ("+strings.Join(conds, " OR ")+")", append([]any{RequestHolder}, args...)...).Delete(&InProgress{}).Error
}

// ErrInProgress means a sync of the same (service, type, id) is already
// requested or running.
var ErrInProgress = errors.New("already in progress")

// InProgressError says who holds the in-progress row and since when.
type InProgressError struct{ Row InProgress }

func (e *InProgressError) Error() string {
	return fmt.Sprintf("already in progress since %s, started by %s", e.Row.StartedAt.UTC().Format("15:04:05"), e.Row.StartedBy)
}

// Unwrap lets errors.Is(err, ErrInProgress) match.
func (e *InProgressError) Unwrap() error { return ErrInProgress }

// RequestSync records who asked for a sync of a link, in the in_progress
// row of its (service, type, id), and makes the link due now. A sync already
// under way wins: a request row still held, or the link being sent (a claim
// writes no row: see ClaimDue), even under a lease that has run out, until
// the rescuer hands it back: the late finish of its worker would otherwise
// end the link with a send older than the request. The request then changes
// nothing and gets an *InProgressError. An expired row is taken over. The
// insert's conflict on the primary key decides races between requests; the
// link's status decides a race with a claim. traceParent is the request's
// W3C traceparent ("" for none), which the send's spans join.
func RequestSync(db *gorm.DB, linkID int64, who string, now time.Time, hold time.Duration, traceParent string) (*Link, error) {
	var link *Link
	err := db.Transaction(func(tx *gorm.DB) error {
		var err error
		if link, err = LinkByID(tx, linkID); err != nil {
			return err
		}
		if link.Status == StatusProcessing {
			return link.underWay(tx)
		}
		row := InProgress{ExternalService: link.ExternalService, LocalType: link.LocalType, LocalID: link.LocalID,
			Holder: RequestHolder, StartedBy: who, StartedAt: now, ExpiresAt: now.Add(hold)}
		res := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "external_service"}, {Name: "local_type"}, {Name: "local_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"holder", "started_by", "started_at", "expires_at"}),
			Where:     clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "in_progress.expires_at <= ?", Vars: []any{now}}}},
		}).Create(&row)
		if res.Error != nil {
			return fmt.Errorf("take in-progress row: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			var held InProgress
			if err := tx.Where("external_service = ? AND local_type = ? AND local_id = ?",
				link.ExternalService, link.LocalType, link.LocalID).Take(&held).Error; err != nil {
				return fmt.Errorf("read in-progress row: %w", err)
			}
			return &InProgressError{Row: held}
		}
		res = tx.Model(&Link{}).Where("id = ? AND status <> ?", link.ID, StatusProcessing).Updates(map[string]any{
			"status": StatusNew, "next_attempt_at": now, "updated_at": now, "trace_parent": traceParent,
			"attempts": gorm.Expr("CASE WHEN status = ? THEN 0 ELSE attempts END", StatusFailed),
		})
		if res.Error != nil || res.RowsAffected == 1 {
			return res.Error
		}
		// A claim took the link since it was read above, and did not see
		// this request (nor any other: this one took the row); the send it
		// started is under way.
		if link, err = LinkByID(tx, linkID); err != nil {
			return err
		}
		return &InProgressError{Row: link.sendRow()}
	})
	return link, err
}

// underWay is the refusal of a Sync now of a link being sent: it names who
// asked for that send, or else the scheduler.
func (l *Link) underWay(tx *gorm.DB) error {
	row := l.sendRow()
	var asked []InProgress
	if err := requestsOf(tx, []progressKey{l.progressKey()}).Limit(1).Find(&asked).Error; err != nil {
		return fmt.Errorf("read in-progress row: %w", err)
	}
	if len(asked) == 1 {
		row.StartedBy, row.StartedAt = asked[0].StartedBy, asked[0].StartedAt
	}
	return &InProgressError{Row: row}
}

// sendRow is a link being sent, as the in_progress row of a send the
// scheduler started: since its claim, held by its worker until its lease
// runs out.
func (l *Link) sendRow() InProgress {
	row := InProgress{ExternalService: l.ExternalService, LocalType: l.LocalType, LocalID: l.LocalID, Holder: l.LeaseOwner,
		StartedBy: SchedulerStarter, StartedAt: l.UpdatedAt}
	if l.LockedUntil != nil {
		row.ExpiresAt = *l.LockedUntil
	}
	return row
}

// sendingAt reports whether the link is being sent under a lease that has
// not run out at now.
func (l *Link) sendingAt(now time.Time) bool {
	return l.Status == StatusProcessing && l.LockedUntil != nil && l.LockedUntil.After(now)
}

// SchedulerStarter is who started a sync that nobody asked for.
const SchedulerStarter = "scheduler"

// ExpiredLease is a processing link whose worker's lease has run out.
type ExpiredLease struct {
	ID              int64
	LeaseOwner      string
	Attempts        int
	ExternalID      string
	ExternalService string
	LocalType       string
	LocalID         string
	IdempotencyKey  string
	LeaseDeletes    bool // the send under way was a delete
}

// ExpiredLeases lists up to limit links whose lease ran out before now.
func ExpiredLeases(db *gorm.DB, now time.Time, limit int) ([]ExpiredLease, error) {
	var out []ExpiredLease
	err := db.Model(&Link{}).Select(`id, lease_owner, attempts, external_id, external_service, local_type, local_id, idempotency_key,
		lease_deletes`).
		Where("status = ? AND locked_until < ?", StatusProcessing, now).Order("locked_until").Limit(limit).Scan(&out).Error
	return out, err
}

// ReleaseExpired returns one expired link to retry, its lost attempt logged
// as ambiguous, so that the next attempt looks the object up before creating
// it; a lost delete of an object may have removed it (DeleteUnknown). It is
// a compare-and-set on status, lease owner and lease: a link its worker
// finished, or whose lease it renewed (RenewLeases), after ExpiredLeases
// read it is left alone (false).
func ReleaseExpired(db *gorm.DB, e ExpiredLease, attempt Attempt, now time.Time) (bool, error) {
	released := false
	err := db.Transaction(func(tx *gorm.DB) error {
		release := map[string]any{"status": StatusRetry, "needs_lookup": gorm.Expr("external_id = ''"),
			"attempts": e.Attempts + 1, "next_attempt_at": now, "lease_owner": "", "locked_until": nil, "lease_deletes": false,
			"last_error": attempt.Error, "last_http_code": 0, "updated_at": now}
		if e.LeaseDeletes {
			release["delete_unknown"] = gorm.Expr("delete_unknown OR external_id <> ''")
		}
		res := tx.Model(&Link{}).Where("id = ? AND status = ? AND lease_owner = ? AND locked_until < ?", e.ID, StatusProcessing,
			e.LeaseOwner, now).Updates(release)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		released = true
		// A Sync now request stays for the next claim to answer.
		return tx.Create(&attempt).Error
	})
	return released, err
}

// RenewLeases moves to until the lease of those links among ids that owner
// holds under a lease that has not run out at now, and returns their ids.
// A link finished since, or taken over by a rescuer, is not among them, nor
// one whose lease ran out, which a rescuer may be handing back: its sender
// must not call for it. The lease alone moves: updated_at stays the
// claim's, which tells the Sync now requests a send answers.
func RenewLeases(db *gorm.DB, owner string, ids []int64, now, until time.Time) ([]int64, error) {
	renewed := make([]int64, 0, len(ids))
	for chunk := range slices.Chunk(ids, linkChunk) {
		var got []int64
		err := db.Raw(`UPDATE external_map SET locked_until = ? WHERE id IN ? AND status = ? AND lease_owner = ? AND locked_until > ?
			RETURNING id`, until, chunk, StatusProcessing, owner, now).Scan(&got).Error
		if err != nil {
			return renewed, fmt.Errorf("renew the lease of %d links: %w", len(chunk), err)
		}
		renewed = append(renewed, got...)
	}
	return renewed, nil
}

// PruneAttempts deletes up to batch attempts older than before and returns
// how many went.
func PruneAttempts(db *gorm.DB, before time.Time, batch int) (int64, error) {
	res := db.Where("id IN (?)", db.Model(&Attempt{}).Select("id").Where("created_at < ?", before).Limit(batch)).Delete(&Attempt{})
	return res.RowsAffected, res.Error
}

// LastCreateWithKey returns a link's latest create sent under the
// idempotency key key (an operation "<type>.create"); ErrNotFound when it
// has none (or its attempts were pruned).
func LastCreateWithKey(db *gorm.DB, linkID int64, key string) (Attempt, error) {
	var a Attempt
	err := db.Where("link_id = ? AND idempotency_key = ? AND operation LIKE ?", linkID, key, "%.create").
		Order("created_at DESC, id DESC").Limit(1).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return a, fmt.Errorf("last create of link %d: %w", linkID, ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("last create of link %d: %w", linkID, err)
	}
	return a, nil
}

// LinkAttempts returns a link's attempts, oldest first.
func LinkAttempts(db *gorm.DB, linkID int64) ([]Attempt, error) {
	var out []Attempt
	return out, db.Where("link_id = ?", linkID).Order("id").Find(&out).Error
}
