package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// What a person does with a run's findings, and what they can ask of a
// provider about one record. Each changes only our rows, as the fixes do:
// the outbox sends what follows.

// Resolve applies a person's decision on a discrepancy waiting for one (see
// models.ResolveDiscrepancy). A record to link must be of a type the run's
// service takes; a new link gets the key the service's settings give it.
func (r *Reconciler) Resolve(ctx context.Context, res models.Resolution) (*models.Resolved, error) {
	db := r.db.WithContext(ctx)
	d, err := models.DiscrepancyByID(db, res.DiscrepancyID)
	if err != nil {
		return nil, err
	}
	run, err := models.RunByID(db, d.RunID)
	if err != nil {
		return nil, err
	}
	if res.Action != models.ResolvedDismissed {
		svc, ok := r.services[run.Service]
		if !ok {
			return nil, models.Invalid(fmt.Sprintf("%s is no longer configured: its objects cannot be linked.", run.Service))
		}
		if _, routed := svc.Config.Objects[res.LocalType]; !routed {
			return nil, models.Invalid(fmt.Sprintf("%s takes no records of type %q; choose one of: %s.", run.Service, res.LocalType,
				strings.Join(slices.Sorted(maps.Keys(svc.Config.Objects)), ", ")))
		}
		res.ExternalKey = typeOf(svc, res.LocalType).keyOf(res.LocalID)
	}
	res.Now = r.clock.Now()
	return models.ResolveDiscrepancy(db, res)
}

// Types lists the local types a service takes, sorted: what a person may
// link its objects to.
func (r *Reconciler) Types(service string) []string {
	return slices.Sorted(maps.Keys(r.services[service].Config.Objects))
}

// ApplyDryRun applies a completed dry run's open fixes on who's word, as a
// real run would have: the safest first, through the service's safety
// valve (beyond it the run waits for a confirmation), each a compare-and-set
// that leaves alone a link changed since the run looked. It returns the run
// as it ended.
func (r *Reconciler) ApplyDryRun(ctx context.Context, runID int64, who string) (*models.ReconciliationRun, error) {
	if err := r.hold(); err != nil {
		return nil, err
	}
	defer r.wg.Done()
	row, err := models.RunByID(r.db.WithContext(ctx), runID)
	if err != nil {
		return nil, err
	}
	svc, ok := r.services[row.Service]
	if !ok {
		return nil, models.Invalid(fmt.Sprintf("%s is no longer configured; its run's fixes cannot be applied", row.Service))
	}
	if row, err = models.StartApply(r.db.WithContext(ctx), runID, who, r.opts.WorkerID, r.clock.Now()); err != nil {
		return nil, err
	}
	r.log.Info("reconciliation dry run applied", "service", row.Service, "run", runID, "by", who)
	rn := &run{r: r, svc: svc, row: *row, o: RunOptions{DryRun: true, TriggeredBy: row.TriggeredBy},
		expected: row.Expected, scanned: row.Scanned, listed: listedOf(row)}
	return rn.execute(ctx, func(ctx context.Context) error { return rn.fixAll(ctx, maxFixes(svc.Config.Reconcile)) })
}

// Looker finds the objects carrying our key, as the provider holds them
// now; connector.HTTP is one.
type Looker interface {
	CanLookup(localType string) bool
	LookupObjects(ctx context.Context, localType, key string) (connector.Call, []map[string]any)
}

// Checked is what one service holds now of one record, as "check the
// provider now" shows it. Nothing is changed by a check.
type Checked struct {
	Service string
	Key     string // our key, looked up
	LinkID  int64  // 0: the record has no link to the service
	// LinkedTo is the object the link points at, "" when none.
	LinkedTo string
	// Cannot says why the service could not be asked, or why its answer
	// says nothing: no lookup endpoint, a failed call. "" when it answered.
	Cannot  string
	Objects []CheckedObject // the objects carrying our key
}

// CheckedObject is one object carrying our key and how it differs from the
// record, field by field (values masked as pages show them).
type CheckedObject struct {
	ID          string
	Differences []models.FieldDifference
}

// Check looks the record up in every service that takes its type, by our
// key, and compares each object found with the record as reconciliation
// does. links are the record's links, for the keys they were sent with.
func (r *Reconciler) Check(ctx context.Context, rec models.Record, links []models.Link) []Checked {
	byService := map[string]models.Link{}
	for _, l := range links {
		byService[l.ExternalService] = l
	}
	var out []Checked
	for _, name := range slices.Sorted(maps.Keys(r.services)) {
		svc := r.services[name]
		if _, routed := svc.Config.Objects[rec.LocalType]; !routed {
			continue
		}
		t := typeOf(svc, rec.LocalType)
		c := Checked{Service: name, Key: t.keyOf(rec.LocalID)}
		if l, ok := byService[name]; ok {
			c.LinkID, c.LinkedTo, c.Key = l.ID, l.ExternalID, l.ExternalKey
		}
		out = append(out, r.checkOne(ctx, svc, t, rec, c))
	}
	return out
}

func (r *Reconciler) checkOne(ctx context.Context, svc Service, t objectType, rec models.Record, c Checked) Checked {
	look, ok := svc.Conn.(Looker)
	if !ok || !look.CanLookup(t.name) {
		c.Cannot = fmt.Sprintf("%s has no lookup for %s records, so it cannot be asked about one; the next reconciliation compares it.", svc.Name, t.name)
		return c
	}
	call, items := look.LookupObjects(ctx, t.name, c.Key)
	switch {
	case call.Class != connector.OK:
		c.Cannot = fmt.Sprintf("The lookup failed: %s", r.redact.Text(call.Error))
		return c
	case len(items) == 0 && len(call.Found) > 0: // a 300 names objects without their fields
		for _, id := range call.Found {
			c.Objects = append(c.Objects, CheckedObject{ID: id})
		}
		c.Cannot = fmt.Sprintf("%s answered with %d objects carrying the key but not their fields: they cannot be compared here.",
			svc.Name, len(call.Found))
		return c
	}
	for _, item := range items {
		o := CheckedObject{ID: t.obj.IDOf(item)}
		for _, d := range differences(rec.Payload, remoteFields(item, t), t) {
			o.Differences = append(o.Differences, r.masked(d))
		}
		c.Objects = append(c.Objects, o)
	}
	return c
}

// Checkable reports whether some service that takes localType can be asked
// for the object carrying our key.
func (r *Reconciler) Checkable(localType string) bool {
	for _, svc := range r.services {
		if _, routed := svc.Config.Objects[localType]; !routed {
			continue
		}
		if look, ok := svc.Conn.(Looker); ok && look.CanLookup(localType) {
			return true
		}
	}
	return false
}
