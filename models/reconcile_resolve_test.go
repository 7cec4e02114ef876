package models_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// Two people keeping different objects of one duplicate at once: one wins,
// the other is told in words, and the link points at the winner's choice —
// never a half of each.
func TestResolveDiscrepancyTwiceAtOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		ds := waitingForAPerson(t, db, now, models.Finding{Kind: discrepancy.DuplicateRemote,
			LocalType: "order", LocalID: "1", ExternalKey: "site_order_1", ExternalIDs: "deal_a,deal_b"})

		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, keep := range []string{"deal_a", "deal_b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = models.ResolveDiscrepancy(db, models.Resolution{DiscrepancyID: ds[0].ID, Action: models.ResolvedKept,
					LocalType: "order", LocalID: "1", ExternalKey: "site_order_1", ExternalID: keep, By: keep + "@example.com", Now: now})
			}()
		}
		wg.Wait()
		var won, refused int
		for _, err := range errs {
			var inv *models.InvalidError
			switch {
			case err == nil:
				won++
			case errors.As(err, &inv):
				refused++
			default:
				// SQLite's single writer may make the loser wait out its
				// busy timeout; Postgres may abort it as a conflict.
				t.Logf("the other attempt failed: %v", err)
				refused++
			}
		}
		require.Equal(t, 1, won, "%v", errs)
		require.Equal(t, 1, refused)
		d, err := models.DiscrepancyByID(db, ds[0].ID)
		require.NoError(t, err)
		links, err := models.RecordLinks(db, "order", "1")
		require.NoError(t, err)
		require.Len(t, links, 1)
		require.Equal(t, d.ResolvedBy, links[0].ExternalID+"@example.com", "the link is the winner's choice")
		require.Equal(t, models.StatusNew, links[0].Status)
		var attempts int64
		require.NoError(t, db.Model(&models.Attempt{}).Where("link_id = ?", links[0].ID).Count(&attempts).Error)
		require.EqualValues(t, 1, attempts, "the loser left nothing behind")
	})
}

// Linking an object to a record whose link already points at another one
// re-points the link, and says which object it leaves linked to nothing —
// in the discrepancy's note (the page, the audit entry) and on the link's
// timeline — rather than dropping it in silence.
func TestLinkingOverAnotherObjectSaysWhichIsLeft(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		ds := waitingForAPerson(t, db, now, models.Finding{Kind: discrepancy.UnlinkedRemote, ExternalIDs: "deal_new"})
		old := models.Link{LocalType: "order", LocalID: "1", ExternalService: "crm", ExternalKey: "site_order_1", ExternalID: "deal_old",
			Status: models.StatusSuccess, NextAttemptAt: now, IdempotencyKey: "order-1-create", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.Create(&old).Error)

		done, err := models.ResolveDiscrepancy(db, models.Resolution{DiscrepancyID: ds[0].ID, Action: models.ResolvedLinked,
			LocalType: "order", LocalID: "1", ExternalID: "deal_new", By: "ana@example.com", Now: now})
		require.NoError(t, err)
		require.Equal(t, "deal_old", done.Replaced)
		require.Equal(t, old.ID, done.Link.ID)
		require.Equal(t, "deal_new", done.Link.ExternalID)
		require.Contains(t, done.Discrepancy.ResolutionNote, "It was linked to deal_old, which stays at crm linked to nothing here")
		var a models.Attempt
		require.NoError(t, db.Where("link_id = ? AND operation = ?", old.ID, "reconcile.link").Take(&a).Error)
		require.Contains(t, a.RequestExcerpt, "it was linked to deal_old before")
	})
}

// waitingForAPerson stores record order/1 and a finished run of crm whose
// one finding f waits for a person, and returns it as listed.
func waitingForAPerson(t *testing.T, db *gorm.DB, now time.Time, f models.Finding) []models.Discrepancy {
	t.Helper()
	canonical, hash, err := models.CanonicalPayload([]byte(`{"title":"Order 1"}`))
	require.NoError(t, err)
	_, err = models.UpsertRecord(db, "order", "1", canonical, hash, now)
	require.NoError(t, err)
	r := models.ReconciliationRun{Service: "crm", StartedAt: now, HeartbeatAt: &now}
	require.NoError(t, models.StartRun(db, &r))
	require.NoError(t, models.FinishRun(db, r.ID, models.RunCompleted, "", now))
	f.RunID, f.Status, f.CreatedAt = r.ID, models.DiscrepancyReported, now
	require.NoError(t, models.InsertFindings(db, []models.Finding{f}))
	ds, err := models.ListDiscrepancies(db, models.DiscrepancyFilter{RunID: r.ID})
	require.NoError(t, err)
	return ds
}
