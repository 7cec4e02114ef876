package reconcile

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// subject is one record as the compare phase sees it: its link to the
// service, if any, and every listed object that carries its key.
type subject struct {
	localType, localID   string
	payload, contentHash string
	deleted              bool // the record is deleted: no object should carry its key
	link                 *linkView
	remotes              []remoteView
	linkIDSeen           bool // the link's external id was listed, under any key
}

// linkView is what decide needs of a link.
type linkView struct {
	id              int64
	status          models.Status
	externalID, key string
	lastError       string
	deleted, moved  bool
}

// remoteView is one listed object.
type remoteView struct{ id, key, fields string }

// verdict is one discrepancy found, and whether a fix is safe at all (the
// service's policy then says whether the run applies it).
type verdict struct {
	f       models.Finding
	fixable bool
	differ  []models.FieldDifference // field_mismatch: the fields and both values
}

// decide compares one record with the provider and returns what is wrong,
// if anything. It is the whole of the comparison's logic, apart from the
// database, so that a table test can hold every case.
func decide(s subject, t objectType, service string) (verdict, bool) {
	v := verdict{f: models.Finding{LocalType: s.localType, LocalID: s.localID, ExternalKey: t.keyOf(s.localID)}}
	ids := make([]string, len(s.remotes))
	for i, r := range s.remotes {
		ids[i] = r.id
	}
	v.f.ExternalIDs = strings.Join(ids, ",")
	if l := s.link; l != nil {
		v.f.LinkID, v.f.LinkExternalID = &l.id, l.externalID
	}
	switch {
	case s.deleted:
		return decideDeleted(v, s, service)
	case len(s.remotes) > 1:
		return v.with(discrepancy.DuplicateRemote, false, "%d objects in %s carry the key %s (%s): a person must decide which one to keep.",
			len(ids), service, v.f.ExternalKey, strings.Join(ids, ", "))
	case s.link == nil:
		return decideUnlinked(v, s, t, service)
	case s.link.deleted || s.link.moved:
		// Deleted: re-creating is an operator's call, on the link page.
		// Moved: the link changed after the listing began, which may predate it.
		return v, false
	case s.link.status == models.StatusSuccess:
		return decideSuccess(v, s, t, service)
	case s.link.status == models.StatusFailed:
		return decideFailed(v, s, t, service)
	}
	return v, false // new, retry, processing: the outbox is on it
}

// decideDeleted: a deleted record, whose object should be gone. One that
// is not is reported, never re-created nor adopted: deleting it again is a
// person's call, who may rather write the record again to keep it.
func decideDeleted(v verdict, s subject, service string) (verdict, bool) {
	if len(s.remotes) == 0 || (s.link != nil && pending(s.link.status)) {
		return v, false // nothing there, or the outbox is deleting it
	}
	ids := strings.Split(v.f.ExternalIDs, ",")
	return v.with(discrepancy.DeletedButPresent, false, "The record was deleted, but %s still has %s carrying our key %s.",
		service, strings.Join(ids, ", "), v.f.ExternalKey)
}

// pending says whether the outbox has a push of the link to do.
func pending(st models.Status) bool {
	return st == models.StatusNew || st == models.StatusRetry || st == models.StatusProcessing
}

// decideUnlinked: a record with no link to the service.
func decideUnlinked(v verdict, s subject, t objectType, service string) (verdict, bool) {
	if len(s.remotes) == 0 {
		return v.with(discrepancy.NeverSynced, true, "No link to %s: the fix queues a create.", service)
	}
	r := s.remotes[0]
	v.f.ExternalKey = r.key
	return adoption(v, s, t, discrepancy.UnlinkedRemote, fmt.Sprintf("%s has %s carrying our key %s, and no link points at it.",
		service, r.id, r.key))
}

// decideSuccess: a link that says the object exists and holds our state.
func decideSuccess(v verdict, s subject, t objectType, service string) (verdict, bool) {
	l := s.link
	if len(s.remotes) == 0 {
		if s.linkIDSeen {
			return v.with(discrepancy.FieldMismatch, true, "%s's %s no longer carries our key %s: the fix pushes the record again.",
				service, l.externalID, l.key)
		}
		return v.with(discrepancy.MissingRemote, true, "%s has no object with the key %s (the link points at %s): the fix creates it again.",
			service, l.key, l.externalID)
	}
	r := s.remotes[0]
	if r.id != l.externalID {
		return adoption(v, s, t, discrepancy.UnlinkedRemote, fmt.Sprintf("The link points at %s, but the object carrying our key %s is %s.",
			l.externalID, r.key, r.id))
	}
	if differ := differences(s.payload, r.fields, t); len(differ) > 0 {
		v.differ = differ
		return v.with(discrepancy.FieldMismatch, true, "%s's %s differs from the record in %s: the fix pushes the record again.",
			service, r.id, strings.Join(fieldNames(differ), ", "))
	}
	return v, false
}

// decideFailed: a link whose last attempt failed for good.
func decideFailed(v verdict, s subject, t objectType, service string) (verdict, bool) {
	l := s.link
	if len(s.remotes) == 0 {
		if l.externalID == "" && !s.linkIDSeen {
			// Not re-queued on its own: the failure may be permanent, and the
			// failed list is where a person retries it once the cause is fixed.
			return v.with(discrepancy.NeverSynced, false, "The link failed and %s has no object with the key %s: retry it from the failed list once the cause is fixed (%s).",
				service, l.key, l.lastError)
		}
		return v, false
	}
	r := s.remotes[0]
	switch {
	case l.externalID == "":
		return adoption(v, s, t, discrepancy.FailedButExists, fmt.Sprintf("The link failed (%s), but %s has %s carrying our key %s.",
			l.lastError, service, r.id, r.key))
	case l.externalID == r.id && len(diffFields(s.payload, r.fields, t)) == 0:
		return adoption(v, s, t, discrepancy.FailedButExists, fmt.Sprintf("The link failed (%s), but %s's %s already holds the record.",
			l.lastError, service, r.id))
	}
	return v, false // a failed update of an object that differs: the failed list's business
}

// adoption is a verdict that points the link at the object found: success
// when the object already holds the record, else a push of the record over it.
func adoption(v verdict, s subject, t objectType, kind, what string) (verdict, bool) {
	r := s.remotes[0]
	v.f.ExternalIDs = r.id
	if len(diffFields(s.payload, r.fields, t)) == 0 {
		v.f.RecordHash = s.contentHash
		return v.with(kind, true, "%s It already holds the record: adopt it.", what)
	}
	return v.with(kind, true, "%s Adopt it and push the record over it.", what)
}

func fieldNames(ds []models.FieldDifference) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Field
	}
	return out
}

func (v verdict) with(kind string, fixable bool, format string, a ...any) (verdict, bool) {
	v.f.Kind, v.fixable, v.f.Detail = kind, fixable, fmt.Sprintf(format, a...)
	return v, true
}

// keyOf is our external key of a local id.
func (t objectType) keyOf(localID string) string {
	return strings.NewReplacer("{local_id}", localID, "{local_type}", t.name).Replace(t.obj.ExternalKey)
}

// diffFields returns the compared fields in which the remote object differs
// from the record, sorted; none when they agree (see differences).
func diffFields(payload, remote string, t objectType) []string {
	var names []string
	for _, d := range differences(payload, remote, t) {
		names = append(names, d.Field)
	}
	return names
}

// differences returns the compared fields in which the remote object
// differs from the record's payload, with both values, sorted; none when
// their hashes agree. The compared fields are the configured ones, else the
// payload's top-level fields but our key and the provider's id (which the
// outbox sets itself). Numbers compare by value: 10.50 and 10.5 are the
// same amount.
func differences(payload, remote string, t objectType) []models.FieldDifference {
	if t.body != nil {
		return mappedDiff(payload, remote, t)
	}
	var want, got map[string]any
	if json.Unmarshal([]byte(payload), &want) != nil || json.Unmarshal([]byte(remote), &got) != nil {
		return []models.FieldDifference{{Field: "(unreadable JSON)"}}
	}
	fields := t.obj.ComparedFields(t.compare, want)
	if fieldsHash(want, fields) == fieldsHash(got, fields) {
		return nil
	}
	var differ []models.FieldDifference
	for _, f := range fields {
		if fieldsHash(want, []string{f}) != fieldsHash(got, []string{f}) {
			differ = append(differ, models.FieldDifference{Field: f, Here: valueText(want, f), There: valueText(got, f)})
		}
	}
	return differ
}

// valueText is a field's value as a person reads it: text as it is, other
// JSON as JSON, and a field that is not there said so.
func valueText(m map[string]any, f string) string {
	v, ok := m[f]
	switch x := v.(type) {
	case nil:
		if !ok {
			return "(not set)"
		}
		return "null"
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// fieldsHash is the SHA-256 of the named fields of m as canonical JSON (an
// absent field is left out, which is not the same as null).
func fieldsHash(m map[string]any, fields []string) [32]byte {
	proj := make(map[string]any, len(fields))
	for _, f := range fields {
		if v, ok := m[f]; ok {
			proj[f] = v
		}
	}
	b, _ := json.Marshal(proj) // sorted keys, numbers as float64: canonical
	return sha256.Sum256(b)
}
