package reconcile

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/config"
)

// withDelete gives the CRM's orders a delete.
func withDelete(s *config.Service) {
	o := s.Objects["order"]
	o.Delete = "DELETE /deals/{external_id}"
	s.Objects = map[string]config.Object{"order": o}
}

// After a delete the reconciliation has nothing to re-create, and an
// object that re-appears at the provider with the deleted record's key is
// reported, not re-created, adopted or deleted on its own.
func TestAfterADeleteReconciliationRecreatesNothingAndReportsAnObjectThatReappears(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db, withDelete)
		e.seedOrders(1, 3)
		_, err := e.eng.Delete(context.Background(), "order", "2")
		require.NoError(t, err)
		e.settle()
		require.Empty(t, e.remoteIDs()[key(2)])
		require.Equal(t, models.StatusDeleted, e.link(2).Status)

		d := e.reconcile(RunOptions{TriggeredBy: "test"})
		require.Empty(t, totals(d), "nothing to re-create, nothing else wrong")
		e.settle()
		require.Empty(t, e.remoteIDs()[key(2)], "no object came back")
		require.Equal(t, models.StatusDeleted, e.link(2).Status)

		back := e.crm.Insert(map[string]any{"external_key": key(2), "title": "Order 2", "total": "12.00"})
		d = e.reconcile(RunOptions{TriggeredBy: "test"})
		require.Equal(t, map[string]int64{discrepancy.DeletedButPresent: 1}, totals(d))
		found, err := models.ListDiscrepancies(db, models.DiscrepancyFilter{RunID: d.Run.ID})
		require.NoError(t, err)
		require.Len(t, found, 1)
		f := found[0]
		require.Equal(t, models.DiscrepancyReported, f.Status, "reported for a person, never fixed on its own")
		require.Equal(t, "The record was deleted, but crm still has "+back+" carrying our key site_order_2.", f.Detail)
		e.settle()
		require.Equal(t, []string{back}, e.remoteIDs()[key(2)], "neither deleted nor doubled")
		l := e.link(2)
		require.Equal(t, models.StatusDeleted, l.Status)
		require.Empty(t, l.ExternalID, "not adopted")
	})
}

// A dry run finds an object of ours with no link (unlinked_remote), and one
// record never sent (never_synced); both records are deleted before a person
// applies the dry run's fixes. Neither fix links a deleted record: the
// object would stay at the provider under a link in success that nothing
// sends again, and the never-sent record would be created.
func TestApplyingADryRunLinksNoDeletedRecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db, withDelete)
		e.orphanRecord(3)
		e.orphanRecord(4)
		orphan := e.crm.Insert(map[string]any{"external_key": key(4), "title": "Order 4", "total": "14.00"})
		d := e.reconcile(RunOptions{DryRun: true})
		require.Equal(t, map[string]int64{discrepancy.NeverSynced: 1, discrepancy.UnlinkedRemote: 1}, totals(d))

		_, err := e.eng.Delete(context.Background(), "order", "3")
		require.NoError(t, err)
		_, err = e.eng.Delete(context.Background(), "order", "4")
		require.NoError(t, err)
		_, err = e.rec.ApplyDryRun(context.Background(), d.Run.ID, "ana@example.com")
		require.NoError(t, err)
		require.EqualValues(t, 0, e.countLinks(), "no link for a deleted record")
		e.settle()
		require.Equal(t, []string{orphan}, e.remoteIDs()[key(4)], "the object is left for a person, not adopted")
		require.Empty(t, e.remoteIDs()[key(3)], "the deleted record was not created")
	})
}
