package reconcile

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/syncdesk/syncdesk/models"
)

// compareAll walks the records of the listed types in id batches, each with
// its link and the objects listed under its key, and stores what differs.
func (rn *run) compareAll(ctx context.Context) error {
	types := map[string]objectType{}
	for _, g := range rn.groups {
		for _, t := range g.types {
			types[t.name] = t
		}
	}
	batch := rn.r.opts.Batch
	for after := int64(0); ; {
		rows, err := models.CompareBatch(rn.r.db.WithContext(ctx), rn.row.ID, rn.svc.Name, rn.types, after, batch, rn.row.StartedAt)
		if err != nil {
			return err
		}
		subjects := subjectsOf(rows)
		var found []models.Finding
		for _, s := range subjects {
			if v, ok := decide(s, types[s.localType], rn.svc.Name); ok {
				found = append(found, rn.withPolicy(v))
			}
		}
		if err := models.InsertFindings(rn.r.db.WithContext(ctx), found); err != nil {
			return err
		}
		rn.scanned += int64(len(subjects))
		if err := rn.progress(ctx); err != nil {
			return err
		}
		if len(subjects) < batch {
			return nil
		}
		after = rows[len(rows)-1].RecordID
	}
}

// withPolicy fills in the run and the status: open when the fix is safe and
// the service's policy fixes the kind, reported otherwise.
func (rn *run) withPolicy(v verdict) models.Finding {
	f := v.f
	f.RunID, f.CreatedAt, f.Status = rn.row.ID, rn.r.clock.Now(), models.DiscrepancyReported
	if v.fixable && rn.svc.Config.Reconcile.Fixes(f.Kind) {
		f.Status = models.DiscrepancyOpen
	}
	return f
}

// subjectsOf folds a compare batch's rows, several per record when several
// objects carry its key, into one subject per record.
func subjectsOf(rows []models.CompareRow) []subject {
	var out []subject
	for i, r := range rows {
		if i == 0 || r.RecordID != rows[i-1].RecordID {
			out = append(out, subject{localType: r.LocalType, localID: r.LocalID, payload: r.Payload,
				contentHash: r.ContentHash, link: linkOf(r), linkIDSeen: r.LinkIDSeen})
		}
		if r.SeenID != nil {
			s := &out[len(out)-1]
			s.remotes = append(s.remotes, remoteView{id: *r.SeenID, key: deref(r.SeenKey), fields: deref(r.SeenFields)})
		}
	}
	return out
}

func linkOf(r models.CompareRow) *linkView {
	if r.LinkID == nil {
		return nil
	}
	return &linkView{id: *r.LinkID, status: models.Status(deref(r.LinkStatus)), externalID: deref(r.LinkExternalID),
		key: deref(r.LinkKey), lastError: deref(r.LinkLastError), deleted: r.LinkDeleted, moved: r.LinkMoved}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// remoteOnly reports the keys the provider has objects for and we have no
// record of: nothing to adopt them into, so a person looks.
func (rn *run) remoteOnly(ctx context.Context) error {
	batch := rn.r.opts.Batch
	afterType, afterID := "", ""
	for {
		keys, err := models.RemoteOnlyBatch(rn.r.db.WithContext(ctx), rn.row.ID, afterType, afterID, batch)
		if err != nil {
			return err
		}
		found := make([]models.Finding, 0, len(keys))
		for _, k := range keys {
			found = append(found, rn.remoteOnlyFinding(k))
		}
		if err := models.InsertFindings(rn.r.db.WithContext(ctx), found); err != nil {
			return err
		}
		if len(keys) < batch {
			return nil
		}
		afterType, afterID = keys[len(keys)-1].LocalType, keys[len(keys)-1].LocalID
	}
}

func (rn *run) remoteOnlyFinding(k models.RemoteOnly) models.Finding {
	ids := strings.Split(k.ExternalIDs, ",")
	sort.Strings(ids)
	v := verdict{f: models.Finding{LocalType: k.LocalType, LocalID: k.LocalID, ExternalKey: k.ExternalKey,
		ExternalIDs: strings.Join(ids, ",")}}
	v.f.Kind, v.f.Detail = models.KindUnlinkedRemote, fmt.Sprintf(
		"%s has %s carrying our key %s, but there is no record %s/%s to link it to.", rn.svc.Name, ids[0], k.ExternalKey, k.LocalType, k.LocalID)
	if k.N > 1 {
		v.f.Kind, v.f.Detail = models.KindDuplicateRemote, fmt.Sprintf(
			"%d objects in %s carry the key %s (%s), and there is no record %s/%s: a person must decide.",
			k.N, rn.svc.Name, k.ExternalKey, strings.Join(ids, ", "), k.LocalType, k.LocalID)
	}
	return rn.withPolicy(v)
}
