package web

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/reconcile"
)

// dealOf returns the id of the CRM's deal carrying key.
func (b *bundle) dealsOf(key string) []string {
	b.t.Helper()
	var ids []string
	for _, o := range b.crm.Objects() {
		if o["external_key"] == key {
			ids = append(ids, o["id"].(string))
		}
	}
	return ids
}

// findingOf returns a run's discrepancy of kind about localID.
func findingOf(t *testing.T, db *gorm.DB, runID int64, kind, localID string) models.Discrepancy {
	t.Helper()
	ds, err := models.ListDiscrepancies(db, models.DiscrepancyFilter{RunID: runID, Kind: kind, Limit: 500})
	require.NoError(t, err)
	for _, d := range ds {
		if d.LocalID == localID {
			return d
		}
	}
	t.Fatalf("run %d found no %s about %s: %+v", runID, kind, localID, ds)
	return models.Discrepancy{}
}

func linkOf(t *testing.T, db *gorm.DB, localID string) models.Link {
	t.Helper()
	ls, err := models.RecordLinks(db, "order", localID)
	require.NoError(t, err)
	require.Len(t, ls, 1, "order %s's links", localID)
	return ls[0]
}

// A dry run with each kind of row waiting for a person: an object carrying
// a key that names no record, a duplicate, and a stray object.
func resolveScene(t *testing.T, db *gorm.DB) (*bundle, *models.ReconciliationRun, string, string) {
	b, rec := reconcileServer(t, db, 0)
	b.seedOrders(1, 3)
	b.orphanRecord(50)
	orphan := b.crm.Insert(map[string]any{"external_key": "site_order_drift_0", "title": "made in the provider"})
	b.crm.Insert(map[string]any{"external_key": "site_order_stray", "title": "a test deal"})
	dup := b.crm.Insert(map[string]any{"external_key": "site_order_2", "title": "Order 2"})
	b.clock.Advance(time.Second)
	run, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{DryRun: true, TriggeredBy: "test"})
	require.NoError(t, err)
	require.Equal(t, models.RunCompleted, run.Status, run.Error)
	return b, run, orphan, dup
}

// Each kind of row waiting for a person is resolved from the run's page:
// an unlinked object is linked to a record of the operator's choosing (its
// link adopts the object's id, and the record is then sent to it as an
// update), one object of a duplicate is kept (the link points at it, the
// other is listed for deletion at the provider, not deleted), and a row is
// dismissed with a reason. Each is audited, and refused in words when it
// cannot apply.
func TestReconcileResolveEachKindOfRow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, run, orphan, dup := resolveScene(t, db)
		op := b.signedIn("ops@example.com", models.RoleOperator)
		page := fmt.Sprintf("/reconcile/%d", run.ID)
		unlinked := findingOf(t, db, run.ID, discrepancy.UnlinkedRemote, "drift_0")
		stray := findingOf(t, db, run.ID, discrepancy.UnlinkedRemote, "stray")
		duplicate := findingOf(t, db, run.ID, discrepancy.DuplicateRemote, "2")
		for _, d := range []models.Discrepancy{unlinked, stray, duplicate} {
			require.Equal(t, models.DiscrepancyReported, d.Status)
		}
		r := op.get(page)
		require.Contains(t, r.body, fmt.Sprintf(`action="/reconcile/%d/discrepancies/%d/resolve"`, run.ID, unlinked.ID))
		require.Contains(t, r.body, `data-testid="resolve-link"`)
		require.Contains(t, r.body, `data-testid="resolve-keep"`)
		resolve := func(d models.Discrepancy, form url.Values) response {
			form.Set("back", page+"?status=reported")
			return op.post(page, fmt.Sprintf("%s/discrepancies/%d/resolve", page, d.ID), form)
		}

		// Link the object to order 50, which has no link to the CRM yet.
		r = resolve(unlinked, url.Values{"action": {"link"}, "external_id": {orphan}, "local_type": {"order"}, "local_id": {"50"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, page+"?status=reported&done=disc-linked", r.header.Get("Location"))
		l := linkOf(t, db, "50")
		require.Equal(t, orphan, l.ExternalID, "the link adopts the object's id")
		require.Equal(t, "site_order_50", l.ExternalKey)
		require.Equal(t, models.StatusNew, l.Status, "the record is sent to it")
		var attempts []models.Attempt
		require.NoError(t, db.Where("link_id = ?", l.ID).Find(&attempts).Error)
		require.Len(t, attempts, 1)
		require.Equal(t, "reconcile.link", attempts[0].Operation)
		require.Contains(t, attempts[0].RequestExcerpt, "no call: ops@example.com linked it to "+orphan)
		var entry models.AuditEntry
		require.NoError(t, db.Where("action = ?", "reconcile.resolve").Take(&entry).Error)
		require.Equal(t, fmt.Sprintf("link %d", l.ID), entry.Target)
		require.Equal(t, models.OutcomeSuccess, entry.Outcome)
		require.NoError(t, b.eng.Drain(context.Background()))
		require.Equal(t, []string{orphan}, b.dealsOf("site_order_50"), "sent as an update of that object: no second deal")
		require.Empty(t, b.dealsOf("site_order_drift_0"))

		// Keep the newer of order 2's two deals.
		first := linkOf(t, db, "2").ExternalID
		r = resolve(duplicate, url.Values{"action": {"keep"}, "external_id": {dup}, "local_type": {"order"}, "local_id": {"2"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, dup, linkOf(t, db, "2").ExternalID, "the link points at the one kept")
		require.ElementsMatch(t, []string{first, dup}, b.dealsOf("site_order_2"), "syncdesk deletes nothing at the provider")
		kept, err := models.DiscrepancyByID(db, duplicate.ID)
		require.NoError(t, err)
		require.Equal(t, models.ResolvedKept, kept.Resolution)
		require.Contains(t, kept.ResolutionNote, "Delete "+first+" at crm")

		// Dismiss the stray: a reason is required.
		r = resolve(stray, url.Values{"action": {"dismiss"}, "reason": {"  "}})
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, "Say why it is dismissed")
		r = resolve(stray, url.Values{"action": {"dismiss"}, "reason": {"a test deal someone made by hand"}})
		require.Equal(t, http.StatusSeeOther, r.status, r.body)

		// What cannot apply is refused in words, and audited as denied.
		r = resolve(unlinked, url.Values{"action": {"dismiss"}, "reason": {"again"}})
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, "already linked by ops@example.com")
		never := findingOf(t, db, run.ID, discrepancy.NeverSynced, "50")
		r = resolve(never, url.Values{"action": {"dismiss"}, "reason": {"x"}})
		require.Equal(t, http.StatusBadRequest, r.status, "an open fix is not waiting for a person")
		require.EqualValues(t, 3, b.auditCount("reconcile.resolve", models.OutcomeSuccess))
		require.EqualValues(t, 3, b.auditCount("reconcile.resolve", models.OutcomeDenied))
		v := b.signedIn("vic@example.com", models.RoleViewer)
		require.NotContains(t, v.get(page).body, `data-testid="disc-resolve"`)
		r = v.post(page, fmt.Sprintf("%s/discrepancies/%d/resolve", page, stray.ID), url.Values{"action": {"dismiss"}, "reason": {"x"}})
		require.Equal(t, http.StatusForbidden, r.status)

		// The page and the CSV say what was done, by whom.
		r = op.get(page + "?status=resolved")
		require.Equal(t, 3, strings.Count(r.body, `data-testid="disc-resolution"`))
		require.Contains(t, r.body, "Dismissed by ops@example.com")
		require.Contains(t, r.body, "a test deal someone made by hand")
		require.Contains(t, between(t, r.body, `data-testid="run-counts"`, "</dd>"), "3 resolved by a person")
		require.NotContains(t, op.get(page+"?status=reported").body, fmt.Sprintf(`data-testid="disc-row-%d"`, stray.ID))
		rows, err := csv.NewReader(strings.NewReader(op.get(page + "/discrepancies.csv?status=resolved").body)).ReadAll()
		require.NoError(t, err)
		require.Len(t, rows, 4)
		for _, row := range rows[1:] {
			require.Equal(t, "Resolved by a person", row[4])
			require.Equal(t, "ops@example.com", row[14])
		}
	})
}

// A dry run's open fixes are applied from its page, through the service's
// safety valve: past it the run waits for a confirmation, as a real run
// does. A dry run is applied once, and not once a newer run has started.
func TestReconcileApplyADryRun(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rec := reconcileServer(t, db, 2)
		for n := 1; n <= 3; n++ {
			b.orphanRecord(n)
		}
		older, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{DryRun: true, TriggeredBy: "test"})
		require.NoError(t, err)
		b.clock.Advance(time.Second)
		run, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{DryRun: true, TriggeredBy: "test"})
		require.NoError(t, err)
		op := b.signedIn("ops@example.com", models.RoleOperator)
		page := fmt.Sprintf("/reconcile/%d", run.ID)

		r := op.get(fmt.Sprintf("/reconcile/%d", older.ID))
		require.Contains(t, r.body, `data-testid="run-not-appliable"`)
		require.NotContains(t, r.body, `data-testid="run-apply"`)
		r = op.post(page, fmt.Sprintf("/reconcile/%d/apply", older.ID), nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, fmt.Sprintf("Run %d of crm started after dry run %d", run.ID, older.ID))

		r = op.get(page)
		require.Contains(t, r.body, "Apply these 3 open fixes")
		require.Contains(t, r.body, "at most 2 without a")
		require.Contains(t, r.body, `data-testid="disc-filter">Show matching</button>`, "the filter button is not called Apply")
		r = op.post(page, page+"/apply", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		require.Equal(t, page+"?done=dryrun-applied-valve", r.header.Get("Location"))
		d, err := models.RunDetailByID(db, run.ID)
		require.NoError(t, err)
		require.Equal(t, models.RunAwaiting, d.Run.Status, "stopped at the safety valve")
		require.Equal(t, "ops@example.com", d.Run.AppliedBy)
		require.True(t, d.Run.DryRun, "it stays a dry run that was applied")
		require.EqualValues(t, 2, d.All.Fixed)
		require.EqualValues(t, 1, d.All.Open)
		r = op.get(r.header.Get("Location"))
		require.Contains(t, r.body, "Fixes were applied up to the safety valve")
		require.Contains(t, between(t, r.body, `data-testid="run-applied"`, "</dd>"), "by ops@example.com")
		require.Contains(t, r.body, "Dry run, its fixes applied later")
		require.Contains(t, r.body, `data-testid="run-confirm"`)

		r = op.post(page, page+"/confirm", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		d, err = models.RunDetailByID(db, run.ID)
		require.NoError(t, err)
		require.Equal(t, models.RunCompleted, d.Run.Status)
		require.EqualValues(t, 3, d.All.Fixed)
		var links int64
		require.NoError(t, db.Model(&models.Link{}).Count(&links).Error)
		require.EqualValues(t, 3, links)

		r = op.post(page, page+"/apply", nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.body, "already applied by ops@example.com")
		require.EqualValues(t, 1, b.auditCount("reconcile.apply", models.OutcomeSuccess))
		require.EqualValues(t, 2, b.auditCount("reconcile.apply", models.OutcomeDenied))
	})
}

// A field that differs shows both values on the page and in the CSV, and
// the run says what Scanned counts: objects at the provider and records here.
func TestReconcileFieldValuesAndScannedInWords(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, rec := reconcileServer(t, db, 0)
		b.seedOrders(1, 2)
		for range 3 {
			b.crm.Insert(map[string]any{"title": "someone else's deal"})
		}
		require.True(t, b.crm.SetField(b.dealsOf("site_order_1")[0], "title", "edited in the provider"))
		b.clock.Advance(time.Second)
		run, err := rec.Run(context.Background(), "crm", reconcile.RunOptions{DryRun: true, TriggeredBy: "test"})
		require.NoError(t, err)
		v := b.signedIn("vic@example.com", models.RoleViewer)
		page := fmt.Sprintf("/reconcile/%d", run.ID)

		r := v.get(page)
		require.Contains(t, between(t, r.body, `data-testid="run-scanned"`, "</dd>"),
			"5 objects at crm (ours and any others it lists) and 2 records here")
		diffs := between(t, r.body, `data-testid="disc-differences"`, "</ul>")
		require.Contains(t, diffs, "<strong>title</strong>")
		require.Contains(t, diffs, `<q data-testid="diff-here">Order 1</q>`)
		require.Contains(t, diffs, `<q data-testid="diff-there">edited in the provider</q>`)
		row := between(t, v.get("/reconcile").body, fmt.Sprintf(`data-testid="run-row-%d"`, run.ID), "</tr>")
		require.Contains(t, row, "5 at crm · 2 here")

		rows, err := csv.NewReader(strings.NewReader(v.get(page + "/discrepancies.csv").body)).ReadAll()
		require.NoError(t, err)
		require.Len(t, rows, 2)
		require.Equal(t, []string{"crm", "Fields differ", "Open", "order", "1"}, rows[1][2:7])
		require.Equal(t, []string{"title", "Order 1", "edited in the provider"}, rows[1][10:13])
	})
}
