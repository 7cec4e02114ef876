package outbox

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// Enqueued says what an upsert did.
type Enqueued struct {
	Changed bool          // false: the same payload was already stored; nothing queued
	Links   []models.Link // the record's links after the upsert
}

// Upsert stores a record's payload and, when it changed, queues a push to
// every service its type is routed to — in one transaction, so a record is
// never stored without its links. The same payload again changes nothing.
// It is a batch of one: a refusal comes back as the error.
func (e *Engine) Upsert(ctx context.Context, localType, localID string, payload []byte) (Enqueued, error) {
	return e.one(ctx, Incoming{Type: localType, ID: localID, Payload: payload})
}

// one applies a batch of one record, its refusal returned as the error,
// and reads the record's links.
func (e *Engine) one(ctx context.Context, in Incoming) (Enqueued, error) {
	res, err := e.UpsertBatch(ctx, []Incoming{in})
	if err != nil {
		return Enqueued{}, err
	}
	if res[0].Refused != nil {
		return Enqueued{}, res[0].Refused
	}
	out := Enqueued{Changed: res[0].Changed}
	out.Links, err = models.RecordLinks(e.db.WithContext(ctx), in.Type, in.ID)
	return out, err
}

// Delete marks a record deleted and queues, to every service it is linked
// to, the push of that: its object deleted (or archived). A record deleted
// already changes nothing (Changed false); a record there is none of is an
// error that wraps models.ErrNotFound. A write of the record afterwards
// brings it back, and its objects are created anew.
func (e *Engine) Delete(ctx context.Context, localType, localID string) (Enqueued, error) {
	return e.one(ctx, Incoming{Type: localType, ID: localID, Delete: true})
}

// MaxBatch is the most records one UpsertBatch takes.
const MaxBatch = 1000

// Incoming is one record as a caller sent it.
type Incoming struct {
	Type, ID string
	Payload  []byte // JSON; any object, canonicalised before it is hashed
	// Delete tombstones the record instead: every link's desired state
	// becomes "deleted" (Payload is not read).
	Delete bool
}

// Applied says what became of one record of a batch.
type Applied struct {
	// Changed: stored with new content (or deleted), and a push queued to
	// every routed service (every linked one, for a delete). A delete of a
	// record already deleted changes nothing.
	Changed bool
	// Refused says why the record was not taken: a *models.InvalidError, or
	// for a delete of no record an error wrapping models.ErrNotFound; nil
	// when it was.
	Refused error
}

// UpsertBatch stores up to MaxBatch records and queues a push for each that
// changed, in one transaction, answering per record in input order. A record
// that cannot be taken (unrouted type, bad key, payload not an object or too
// large, a key that came earlier in the batch, a delete of no record) is
// refused and the others go on; a database error rolls the whole batch back
// and is returned, so a batch is never half written. The same batch again
// changes nothing. A delete (Incoming.Delete) marks its record deleted and
// queues its links: see Delete.
//
// It costs three statements inside the transaction when the changed
// records have up to 1,000 links between them: a read of the records
// stored (an update notes which of their fields it changes), a multi-row
// upsert of the records that returns the keys that changed, and a
// multi-row upsert of those records' links (none when nothing changed;
// one statement per 1,000 links).
func (e *Engine) UpsertBatch(ctx context.Context, batch []Incoming) ([]Applied, error) {
	return e.ApplyBatch(ctx, batch, nil)
}

// ApplyBatch is UpsertBatch with also, when not nil, run inside the same
// transaction after the batch's writes: a source advances its cursor there,
// so that the cursor and the writes it caused commit together or not at all.
// also runs even when nothing in the batch changed or every record was refused.
func (e *Engine) ApplyBatch(ctx context.Context, batch []Incoming, also func(tx *gorm.DB) error) ([]Applied, error) {
	if len(batch) > MaxBatch {
		return nil, models.Invalid(fmt.Sprintf("a batch holds at most %d records; this one holds %d", MaxBatch, len(batch)))
	}
	out, at, w := e.sift(batch)
	if len(w.upserts)+len(w.deletes) == 0 && also == nil {
		return out, nil
	}
	now, trace := e.clock.Now(), traceParent(ctx)
	var changed, missing map[models.RecordKey]bool
	err := e.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if changed, missing, err = e.write(tx, w, now, trace); err != nil || also == nil {
			return err
		}
		return also(tx)
	})
	if err != nil {
		return nil, err
	}
	for k, i := range at {
		out[i].Changed = changed[k]
		if missing[k] {
			out[i].Refused = fmt.Errorf("there is no record %s/%s to delete: %w", k.LocalType, k.LocalID, models.ErrNotFound)
		}
	}
	if len(changed) > 0 {
		e.poke()
	}
	return out, nil
}

// writes are a batch's records to store and to delete.
type writes struct {
	upserts []models.RecordWrite
	deletes []models.RecordKey
}

// write stores the batch's records, deletes those it deletes, and queues a
// push of each that changed: to every routed service for a record stored,
// to every service it is linked to for a record deleted. It also returns
// the deletes of no record at all.
func (e *Engine) write(tx *gorm.DB, w writes, now time.Time, trace string) (changed, missing map[models.RecordKey]bool, err error) {
	if changed, err = models.UpsertRecords(tx, w.upserts, now); err != nil {
		return nil, nil, err
	}
	var specs []models.LinkSpec
	for _, u := range w.upserts {
		if changed[u.RecordKey] {
			specs = append(specs, e.linkSpecs(u.LocalType, u.LocalID, trace)...)
		}
	}
	deleted, missing, err := tombstone(tx, w.deletes, now)
	if err != nil {
		return nil, nil, err
	}
	links, err := models.LinksOfRecords(tx, deleted)
	if err != nil {
		return nil, nil, err
	}
	for _, l := range links {
		specs = append(specs, models.LinkSpec{RecordKey: models.RecordKey{LocalType: l.LocalType, LocalID: l.LocalID},
			Service: l.ExternalService, ExternalKey: l.ExternalKey, IdempotencyKey: l.IdempotencyKey, TraceParent: trace})
	}
	for _, k := range deleted {
		changed[k] = true
	}
	return changed, missing, models.QueueLinks(tx, specs, now)
}

// tombstone deletes records and returns those it deleted, and the keys of
// no record (a record deleted already is neither).
func tombstone(tx *gorm.DB, keys []models.RecordKey, now time.Time) (deleted []models.RecordKey, missing map[models.RecordKey]bool, err error) {
	marked, err := models.TombstoneRecords(tx, keys, now)
	if err != nil {
		return nil, nil, err
	}
	var rest []models.RecordKey
	for _, k := range keys {
		if marked[k] {
			deleted = append(deleted, k)
		} else {
			rest = append(rest, k)
		}
	}
	have, err := models.ExistingRecords(tx, rest)
	if err != nil {
		return nil, nil, err
	}
	missing = map[models.RecordKey]bool{}
	for _, k := range rest {
		missing[k] = !have[k]
	}
	return deleted, missing, nil
}

// sift refuses the records of a batch that cannot be taken and prepares the
// others' writes; at says where each key taken is in the batch.
func (e *Engine) sift(batch []Incoming) (out []Applied, at map[models.RecordKey]int, w writes) {
	out = make([]Applied, len(batch))
	at = make(map[models.RecordKey]int, len(batch))
	w.upserts = make([]models.RecordWrite, 0, len(batch))
	for i, in := range batch {
		rw, err := e.prepare(in)
		if first, seen := at[rw.RecordKey]; err == nil && seen {
			err = models.Invalid(fmt.Sprintf("the same type and id came earlier in this batch, as record %d", first+1))
		}
		if err != nil {
			out[i].Refused = err
			continue
		}
		at[rw.RecordKey] = i
		if in.Delete {
			w.deletes = append(w.deletes, rw.RecordKey)
		} else {
			w.upserts = append(w.upserts, rw)
		}
	}
	return out, at, w
}

// prepare checks one incoming record and canonicalises its payload. A
// delete needs only a good key: a record whose type is no longer routed may
// still have links whose objects are to go.
func (e *Engine) prepare(in Incoming) (models.RecordWrite, error) {
	w := models.RecordWrite{RecordKey: models.RecordKey{LocalType: in.Type, LocalID: in.ID}}
	if err := CheckKey(in.Type, in.ID); err != nil || in.Delete {
		return w, err
	}
	if !e.Routed(in.Type) {
		return w, models.Invalid(fmt.Sprintf("no service is configured for records of type %q", in.Type))
	}
	var err error
	w.Payload, w.Hash, err = models.CanonicalPayload(in.Payload)
	return w, err
}

func (e *Engine) linkSpecs(localType, localID, trace string) []models.LinkSpec {
	var specs []models.LinkSpec
	for _, name := range e.routes[localType] {
		obj := e.services[name].Config.Objects[localType]
		key := strings.NewReplacer("{local_id}", localID, "{local_type}", localType).Replace(obj.ExternalKey)
		specs = append(specs, models.LinkSpec{RecordKey: models.RecordKey{LocalType: localType, LocalID: localID}, Service: name, ExternalKey: key,
			IdempotencyKey: models.CreateKey(localType, localID), TraceParent: trace})
	}
	return specs
}

// Routed reports whether a local type goes to any service.
func (e *Engine) Routed(localType string) bool { return len(e.routes[localType]) > 0 }

// CheckKey says why a record's type or id cannot be taken, or returns nil.
// They end up in paths, in external keys and in Idempotency-Key headers, so
// neither may hold a slash, a space or a control character; and they are
// shown on pages, so neither may hold an invisible formatting character
// (Unicode category Cf): U+202E and the other bidi controls reorder the
// text around them, so that the id "12\u202e34" reads as "1243",
// and zero-width ones make two ids that look the same.
func CheckKey(localType, localID string) error {
	if err := checkKeyPart("type", localType, 64); err != nil {
		return err
	}
	return checkKeyPart("id", localID, 128)
}

func checkKeyPart(field, s string, max int) error {
	plain := s != "" && len(s) <= max && utf8.ValidString(s)
	for _, r := range s {
		if unicode.Is(unicode.Cf, r) {
			return models.Invalid(fmt.Sprintf("the %s holds %U, an invisible formatting character that changes how text reads on a page; "+
				"record types and ids may not hold one", field, r))
		}
		plain = plain && r != '/' && !unicode.IsSpace(r) && !unicode.IsControl(r)
	}
	if !plain {
		return models.Invalid(fmt.Sprintf("the %s must be 1 to %d characters without spaces, slashes or control characters", field, max))
	}
	return nil
}
