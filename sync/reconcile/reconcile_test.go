package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// Seeded drift of every kind is reported exactly; the fixes (and the outbox
// draining them) leave nothing fixable, one object per key, and the
// duplicate still reported for a person.
func TestDriftIsReportedFixedAndGone(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.seedOrders(1, 12)
		ids := e.remoteIDs()
		for n := 1; n <= 3; n++ {
			require.True(t, e.crm.Delete(ids[key(n)][0]), "missing_remote: order %d's deal deleted", n)
		}
		require.True(t, e.crm.SetField(ids[key(4)][0], "title", "Renamed in the CRM"))
		require.True(t, e.crm.SetField(ids[key(5)][0], "total", "0.00"))
		e.crm.Insert(map[string]any{"external_key": key(6), "title": "Order 6, again"})
		// failed_but_exists: the create of order 7 reached the CRM, its answer did not.
		require.NoError(t, db.Model(&models.Link{}).Where("id = ?", e.link(7).ID).Updates(map[string]any{
			"status": models.StatusFailed, "external_id": "", "needs_lookup": true, "last_error": "connection reset",
			"updated_at": e.clock.Now()}).Error)
		// unlinked_remote: order 20 is ours and in the CRM, with no link.
		e.orphanRecord(20)
		e.crm.Insert(map[string]any{"external_key": key(20), "title": "Order 20", "total": "30.00"})
		for n := 21; n <= 24; n++ {
			e.orphanRecord(n) // never_synced
		}
		e.crm.Insert(map[string]any{"title": "someone else's deal"}) // no key of ours: not our business

		first := e.reconcile(RunOptions{TriggeredBy: "test"})
		require.Equal(t, models.RunCompleted, first.Run.Status, first.Run.Error)
		require.Equal(t, map[string]int64{discrepancy.MissingRemote: 3, discrepancy.FieldMismatch: 2, discrepancy.UnlinkedRemote: 1,
			discrepancy.DuplicateRemote: 1, discrepancy.NeverSynced: 4, discrepancy.FailedButExists: 1}, totals(first))
		require.Equal(t, models.KindCount{Fixed: 11, Reported: 1, Total: 12}, first.All)
		require.EqualValues(t, 11, first.Run.Fixed)
		require.EqualValues(t, 12+17, first.Run.Scanned, "12 objects listed and 17 records compared")
		require.Equal(t, first.Run.Expected, first.Run.Scanned)

		e.settle()
		second := e.reconcile(RunOptions{})
		require.Equal(t, map[string]int64{discrepancy.DuplicateRemote: 1}, totals(second), "nothing fixable is left")
		require.EqualValues(t, 1, second.All.Reported)
		dup, err := models.ListDiscrepancies(db, models.DiscrepancyFilter{RunID: second.Run.ID})
		require.NoError(t, err)
		require.Len(t, dup, 1)
		require.Equal(t, key(6), dup[0].ExternalKey)
		require.ElementsMatch(t, e.remoteIDs()[key(6)], strings.Split(dup[0].ExternalIDs, ","), "every id of the duplicate is stored")

		remote := e.remoteIDs()
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 20, 21, 22, 23, 24} {
			require.Len(t, remote[key(n)], 1, "objects carrying %s", key(n))
			require.Equal(t, models.StatusSuccess, e.link(n).Status, "link of order %d", n)
		}
		require.Len(t, remote[key(6)], 2, "the duplicate waits for a person")
		for _, o := range e.crm.Objects() {
			if o["id"] == ids[key(4)][0] {
				require.Equal(t, "Order 4", o["title"], "the record was pushed over the mismatch")
			}
		}
	})
}

// The lost-response orphan, end to end: a create whose answer was lost
// ends failed (one attempt allowed); reconciliation adopts the object it
// made, and the CRM still holds one object for the key.
func TestLostResponseOrphanIsAdopted(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db, func(s *config.Service) { s.Retry.MaxAttempts = 1 })
		e.crm.Script(sandbox.DropAfterCommit())
		_, err := e.eng.Upsert(context.Background(), "order", "1", []byte(orderPayload(1)))
		require.NoError(t, err)
		require.NoError(t, e.eng.Drain(context.Background()))
		l := e.link(1)
		require.Equal(t, models.StatusFailed, l.Status, "one attempt, its answer lost: %s", l.LastError)
		require.Empty(t, l.ExternalID)
		require.Equal(t, 1, e.crm.CountByKey(key(1)), "the create took effect")

		d := e.reconcile(RunOptions{})
		require.Equal(t, map[string]int64{discrepancy.FailedButExists: 1}, totals(d))
		require.EqualValues(t, 1, d.All.Fixed)

		l = e.link(1)
		require.Equal(t, models.StatusSuccess, l.Status, "adopted: the object already holds the record")
		require.Equal(t, e.remoteIDs()[key(1)][0], l.ExternalID)
		require.Empty(t, l.LastError)
		attempts, err := models.LinkAttempts(db, l.ID)
		require.NoError(t, err)
		require.Equal(t, "reconcile.adopt", attempts[len(attempts)-1].Operation, "the adoption is in the attempt log")

		e.settle()
		require.Equal(t, 1, e.crm.CountByKey(key(1)))
		require.Empty(t, totals(e.reconcile(RunOptions{})))
	})
}

// A run that would fix more than max_fixes stops at it and fixes nothing
// more until an operator confirms; then it applies the rest.
func TestSafetyValveWaitsForConfirmation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db, func(s *config.Service) { s.Reconcile.MaxFixes = 3 })
		for n := 1; n <= 5; n++ {
			e.orphanRecord(n)
		}
		d := e.reconcile(RunOptions{})
		require.Equal(t, models.RunAwaiting, d.Run.Status)
		require.Equal(t, models.KindCount{Open: 2, Fixed: 3, Total: 5}, d.All)
		require.EqualValues(t, 3, e.countLinks(), "nothing beyond the cap")

		require.NoError(t, e.eng.Drain(context.Background()))
		e.clock.Advance(time.Minute)
		require.EqualValues(t, 3, e.countLinks(), "still nothing beyond the cap: the run waits")
		_, err := e.rec.Confirm(context.Background(), d.Run.ID+1, "ops@example.com")
		require.ErrorIs(t, err, models.ErrNotFound)

		run, err := e.rec.Confirm(context.Background(), d.Run.ID, "ops@example.com")
		require.NoError(t, err)
		require.Equal(t, models.RunCompleted, run.Status)
		require.EqualValues(t, 5, run.Fixed)
		d = e.detail(run.ID)
		require.Equal(t, "ops@example.com", d.Run.ConfirmedBy)
		require.Equal(t, models.KindCount{Fixed: 5, Total: 5}, d.All)
		require.EqualValues(t, 5, e.countLinks())

		_, err = e.rec.Confirm(context.Background(), d.Run.ID, "ops@example.com")
		var invalid *models.InvalidError
		require.ErrorAs(t, err, &invalid, "a completed run cannot be confirmed again")
	})
}

// A newer run that compares afresh supersedes one awaiting confirmation:
// the old findings are out of date, and confirming them is refused in words.
func TestOnlyTheLatestRunCanBeConfirmed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db, func(s *config.Service) { s.Reconcile.MaxFixes = 1 })
		e.orphanRecord(1)
		e.orphanRecord(2)
		old := e.reconcile(RunOptions{})
		require.Equal(t, models.RunAwaiting, old.Run.Status)
		require.Zero(t, old.SupersededBy, "the latest run is not superseded")
		e.settle()
		newer := e.reconcile(RunOptions{})
		require.Equal(t, models.RunCompleted, newer.Run.Status, "one fix left, within the cap")
		require.Equal(t, newer.Run.ID, e.detail(old.Run.ID).SupersededBy)
		_, err := e.rec.Confirm(context.Background(), old.Run.ID, "ops@example.com")
		var invalid *models.InvalidError
		require.ErrorAs(t, err, &invalid)
		require.Contains(t, invalid.Reason, fmt.Sprintf("Run %d was superseded by run %d: its findings are out of date", old.Run.ID, newer.Run.ID))
		require.Empty(t, e.detail(old.Run.ID).Run.ConfirmedBy, "nothing was confirmed")
	})
}

// A dry run compares afresh too: it supersedes an older run awaiting
// confirmation. A run that did not compare to the end (failed,
// interrupted, still running) supersedes nothing, but the older run can no
// longer be confirmed either, and the refusal says why.
func TestWhichNewerRunsSupersede(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db, func(s *config.Service) { s.Reconcile.MaxFixes = 1 })
		for n := 1; n <= 4; n++ {
			e.orphanRecord(n)
		}
		old := e.reconcile(RunOptions{})
		require.Equal(t, models.RunAwaiting, old.Run.Status)

		now := e.clock.Now()
		other := models.ReconciliationRun{Service: "crm", TriggeredBy: "elsewhere", Owner: "other", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &other))
		_, err := e.rec.Confirm(context.Background(), old.Run.ID, "ops@example.com")
		var invalid *models.InvalidError
		require.ErrorAs(t, err, &invalid)
		require.Contains(t, invalid.Reason, fmt.Sprintf("Run %d of crm started after run %d (it is running)", other.ID, old.Run.ID))
		require.Zero(t, e.detail(old.Run.ID).SupersededBy, "a running run has compared nothing yet")
		require.NoError(t, models.FinishRun(db, other.ID, models.RunFailed, "listing failed", now))
		require.Zero(t, e.detail(old.Run.ID).SupersededBy, "a failed run compared nothing")
		_, err = e.rec.Confirm(context.Background(), old.Run.ID, "ops@example.com")
		require.ErrorAs(t, err, &invalid)
		require.Contains(t, invalid.Reason, fmt.Sprintf("Run %d of crm started after run %d (it is failed)", other.ID, old.Run.ID))

		dry := e.reconcile(RunOptions{DryRun: true})
		require.Equal(t, models.RunCompleted, dry.Run.Status)
		require.Equal(t, dry.Run.ID, e.detail(old.Run.ID).SupersededBy)
		later := e.reconcile(RunOptions{})
		require.Equal(t, models.RunAwaiting, later.Run.Status)
		require.Equal(t, dry.Run.ID, e.detail(old.Run.ID).SupersededBy, "the first newer run that compared")
		require.Zero(t, later.SupersededBy)
	})
}

// A dry run reports what it would fix and changes nothing.
func TestDryRunFixesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.seedOrders(1, 2)
		e.orphanRecord(3)
		require.True(t, e.crm.SetField(e.remoteIDs()[key(1)][0], "title", "Changed"))
		d := e.reconcile(RunOptions{DryRun: true})
		require.Equal(t, models.RunCompleted, d.Run.Status)
		require.True(t, d.Run.DryRun)
		require.Equal(t, map[string]int64{discrepancy.FieldMismatch: 1, discrepancy.NeverSynced: 1}, totals(d))
		require.Equal(t, models.KindCount{Open: 2, Total: 2}, d.All, "open: would be fixed")
		require.EqualValues(t, 2, e.countLinks())
		require.Equal(t, models.StatusSuccess, e.link(1).Status)
	})
}

// Report-only policy and compared fields come from the service's config.
func TestPolicyAndComparedFields(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db, func(s *config.Service) {
			s.Reconcile.AutoFix = map[string]bool{discrepancy.MissingRemote: false}
			s.Reconcile.Compare = map[string][]string{"order": {"title"}}
		})
		e.seedOrders(1, 3)
		ids := e.remoteIDs()
		require.True(t, e.crm.Delete(ids[key(1)][0]))
		require.True(t, e.crm.SetField(ids[key(2)][0], "total", "999.00"), "not a compared field")
		require.True(t, e.crm.SetField(ids[key(3)][0], "title", "Changed"))
		d := e.reconcile(RunOptions{})
		require.Equal(t, map[string]int64{discrepancy.MissingRemote: 1, discrepancy.FieldMismatch: 1}, totals(d))
		require.Equal(t, models.KindCount{Fixed: 1, Reported: 1, Total: 2}, d.All, "missing_remote reported only")
		require.Equal(t, models.StatusSuccess, e.link(1).Status, "no re-create")
	})
}
