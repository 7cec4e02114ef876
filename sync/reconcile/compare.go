package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// compareAll walks the records of each listed type in batches, each with
// its link and the objects listed under its key, and stores what differs.
func (rn *run) compareAll(ctx context.Context) error {
	for _, g := range rn.groups {
		for _, t := range g.types {
			if err := rn.compareType(ctx, t); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rn *run) compareType(ctx context.Context, t objectType) error {
	batch := rn.r.opts.Batch
	for after := ""; ; {
		b, err := models.LoadCompareBatch(rn.r.db.WithContext(ctx), rn.row.ID, rn.svc.Name, t.name, after, batch)
		if err != nil {
			return err
		}
		subjects, err := rn.subjectsOf(ctx, b)
		if err != nil {
			return err
		}
		var found []models.Finding
		for _, s := range subjects {
			if v, ok := decide(s, t, rn.svc.Name); ok {
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
		if len(b.Records) < batch {
			return nil
		}
		after = b.Records[len(b.Records)-1].LocalID
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
	if len(v.differ) > 0 {
		f.Differences = rn.r.differencesJSON(v.differ)
	}
	return f
}

// differencesJSON is how a finding stores the values that differ: masked
// as every page and export would show them, since a record's fields may
// hold secrets (a field the redactor names sensitive, a token in a note).
func (r *Reconciler) differencesJSON(ds []models.FieldDifference) string {
	out := make([]models.FieldDifference, len(ds))
	for i, d := range ds {
		out[i] = r.masked(d)
	}
	b, _ := json.Marshal(out) // strings only: always encodes
	return string(b)
}

// masked is a difference with its values as pages may show them.
func (r *Reconciler) masked(d models.FieldDifference) models.FieldDifference {
	last := d.Field
	if i := strings.LastIndexByte(last, '.'); i >= 0 {
		last = last[i+1:]
	}
	if r.redact.Sensitive(last) {
		d.Here, d.There = "[redacted]", "[redacted]"
		return d
	}
	d.Here, d.There = r.redact.Text(d.Here), r.redact.Text(d.There)
	return d
}

// subjectsOf joins a batch's records with their links and listed objects.
// A link with no object under its key is looked up by its external id too:
// the object may have lost our key rather than gone.
func (rn *run) subjectsOf(ctx context.Context, b *models.CompareBatch) ([]subject, error) {
	seen := map[string][]remoteView{}
	for _, s := range b.Seen {
		seen[s.LocalID] = append(seen[s.LocalID], remoteView{id: s.ExternalID, key: s.ExternalKey, fields: s.Fields})
	}
	links := map[string]*linkView{}
	var lookup []string
	for _, l := range b.Links {
		links[l.LocalID] = &linkView{id: l.ID, status: l.Status, externalID: l.ExternalID, key: l.ExternalKey,
			lastError: l.LastError, deleted: l.RemoteDeletedAt != nil, moved: !l.UpdatedAt.Before(rn.row.StartedAt)}
		if len(seen[l.LocalID]) == 0 && l.ExternalID != "" {
			lookup = append(lookup, l.ExternalID)
		}
	}
	var types []string
	if len(b.Records) > 0 {
		types = rn.endpointTypes(b.Records[0].LocalType)
	}
	listed, err := models.SeenIDs(rn.r.db.WithContext(ctx), rn.row.ID, types, lookup)
	if err != nil {
		return nil, err
	}
	out := make([]subject, len(b.Records))
	for i, r := range b.Records {
		out[i] = subject{localType: r.LocalType, localID: r.LocalID, payload: r.Payload, contentHash: r.ContentHash,
			deleted: r.DeletedAt != nil, link: links[r.LocalID], remotes: seen[r.LocalID]}
		if l := out[i].link; l != nil {
			out[i].linkIDSeen = listed[l.externalID]
		}
	}
	return out, nil
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
	v.f.Kind, v.f.Detail = discrepancy.UnlinkedRemote, fmt.Sprintf(
		"%s has %s carrying our key %s, but there is no record %s/%s to link it to.", rn.svc.Name, ids[0], k.ExternalKey, k.LocalType, k.LocalID)
	if k.N > 1 {
		v.f.Kind, v.f.Detail = discrepancy.DuplicateRemote, fmt.Sprintf(
			"%d objects in %s carry the key %s (%s), and there is no record %s/%s: a person must decide.",
			k.N, rn.svc.Name, k.ExternalKey, strings.Join(ids, ", "), k.LocalType, k.LocalID)
	}
	return rn.withPolicy(v)
}
