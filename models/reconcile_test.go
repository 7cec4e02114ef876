package models_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// seedRuns makes a finished run per service and gives the last one
// discrepancies of three kinds; it returns that run's id.
func seedRuns(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var last int64
	for i, svc := range []string{"crm", "payments", "crm"} {
		r := models.ReconciliationRun{Service: svc, StartedAt: now.Add(time.Duration(i) * time.Minute), HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &r))
		require.NoError(t, models.FinishRun(db, r.ID, models.RunCompleted, "", now))
		last = r.ID
	}
	var fs []models.Finding
	for i := range 7 {
		kind, status := discrepancy.NeverSynced, models.DiscrepancyFixed
		switch {
		case i < 2:
			kind, status = discrepancy.DuplicateRemote, models.DiscrepancyReported
		case i < 3:
			kind, status = discrepancy.MissingRemote, models.DiscrepancyOpen
		}
		fs = append(fs, models.Finding{RunID: last, Kind: kind, Status: status, LocalType: "order", LocalID: fmt.Sprint(i),
			ExternalKey: fmt.Sprintf("site_order_%d", i), ExternalIDs: "=HYPERLINK(\"x\"),deal_2", Detail: "a, \"quoted\" detail",
			CreatedAt: now})
	}
	require.NoError(t, models.InsertFindings(db, fs))
	return last
}

func TestRunQueries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		id := seedRuns(t, db)
		runs, err := models.ListRuns(db, models.RunFilter{})
		require.NoError(t, err)
		require.Len(t, runs, 3)
		require.Equal(t, id, runs[0].ID, "newest first")
		crm, err := models.ListRuns(db, models.RunFilter{Service: "crm", BeforeID: id})
		require.NoError(t, err)
		require.Len(t, crm, 1, "the older crm run, before the cursor")
		require.Equal(t, "crm", crm[0].Service)

		d, err := models.RunDetailByID(db, id)
		require.NoError(t, err)
		require.Len(t, d.Kinds, len(discrepancy.Kinds), "every kind, zeros included")
		require.Equal(t, models.KindCount{Open: 1, Fixed: 4, Reported: 2, Total: 7}, d.All)
		for _, k := range d.Kinds {
			want := map[string]models.KindCount{
				discrepancy.DuplicateRemote: {Kind: discrepancy.DuplicateRemote, Reported: 2, Total: 2},
				discrepancy.MissingRemote:   {Kind: discrepancy.MissingRemote, Open: 1, Total: 1},
				discrepancy.NeverSynced:     {Kind: discrepancy.NeverSynced, Fixed: 4, Total: 4},
			}[k.Kind]
			want.Kind = k.Kind
			require.Equal(t, want, k)
		}
		_, err = models.RunDetailByID(db, id+100)
		require.ErrorIs(t, err, models.ErrNotFound)
	})
}

func TestDiscrepancyPages(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		id := seedRuns(t, db)
		var seen []string
		for after := int64(0); ; {
			page, err := models.ListDiscrepancies(db, models.DiscrepancyFilter{RunID: id, Kind: discrepancy.NeverSynced, AfterID: after, Limit: 3})
			require.NoError(t, err)
			for _, d := range page {
				seen = append(seen, d.LocalID)
			}
			if len(page) < 3 {
				break
			}
			after = page[len(page)-1].ID
		}
		require.Equal(t, []string{"3", "4", "5", "6"}, seen, "keyset pages, in order, no repeats")
		open, err := models.ListDiscrepancies(db, models.DiscrepancyFilter{RunID: id, Status: models.DiscrepancyOpen})
		require.NoError(t, err)
		require.Len(t, open, 1)
	})
}

// An export longer than one batch streams every row once, in id order,
// filtered as asked.
func TestEachDiscrepancyBatchSpansBatches(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Now().UTC()
		r := models.ReconciliationRun{Service: "crm", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &r))
		fs := make([]models.Finding, 1234)
		for i := range fs {
			kind := discrepancy.NeverSynced
			if i%10 == 0 {
				kind = discrepancy.MissingRemote
			}
			fs[i] = models.Finding{RunID: r.ID, Kind: kind, Status: models.DiscrepancyOpen,
				LocalType: "order", LocalID: fmt.Sprint(i), CreatedAt: now}
		}
		require.NoError(t, models.InsertFindings(db, fs))
		var sizes []int
		var last int64
		ids := map[string]bool{}
		require.NoError(t, models.EachDiscrepancyBatch(context.Background(), db, models.DiscrepancyFilter{RunID: r.ID},
			func(batch []models.Discrepancy) error {
				sizes = append(sizes, len(batch))
				for _, d := range batch {
					require.Greater(t, d.ID, last, "in id order")
					last = d.ID
					ids[d.LocalID] = true
				}
				return nil
			}))
		require.Equal(t, []int{500, 500, 234}, sizes)
		require.Len(t, ids, 1234, "no row twice, none missing")

		var missing int
		require.NoError(t, models.EachDiscrepancyBatch(context.Background(), db,
			models.DiscrepancyFilter{RunID: r.ID, Kind: discrepancy.MissingRemote}, func(batch []models.Discrepancy) error {
				missing += len(batch)
				return nil
			}))
		require.Equal(t, 124, missing, "filtered by kind")

		stop := errors.New("the client went away")
		calls := 0
		err := models.EachDiscrepancyBatch(context.Background(), db, models.DiscrepancyFilter{RunID: r.ID},
			func([]models.Discrepancy) error { calls++; return stop })
		require.ErrorIs(t, err, stop)
		require.Equal(t, 1, calls, "the first error stops the export")
	})
}

// Two endpoints may number their objects alike (HubSpot's contacts and
// companies both count from 1): a run keeps company 101 and contact 101
// both, and a contact link's id 101 counts as listed only if a contact 101
// was. The same object listed twice, as pages shift, is kept once.
func TestListedObjectsOfTwoEndpointsMayShareAnID(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		r := models.ReconciliationRun{Service: "hubspot", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &r))
		company := models.Seen{RunID: r.ID, LocalType: "company", LocalID: "7", ExternalKey: "company_7", ExternalID: "101", Fields: "{}"}
		contact := models.Seen{RunID: r.ID, LocalType: "contact", LocalID: "9", ExternalKey: "contact_9", ExternalID: "101", Fields: "{}"}
		require.NoError(t, models.InsertSeen(db, []models.Seen{company}))
		require.NoError(t, models.InsertSeen(db, []models.Seen{contact, company}))
		var n int64
		require.NoError(t, db.Model(&models.Seen{}).Where("run_id = ?", r.ID).Count(&n).Error)
		require.EqualValues(t, 2, n, "the company and the contact, the company once")

		seen, err := models.SeenIDs(db, r.ID, []string{"contact"}, []string{"101", "102"})
		require.NoError(t, err)
		require.Equal(t, map[string]bool{"101": true}, seen)
		require.NoError(t, db.Where("local_type = ?", "contact").Delete(&models.Seen{}).Error)
		seen, err = models.SeenIDs(db, r.ID, []string{"contact"}, []string{"101"})
		require.NoError(t, err)
		require.Empty(t, seen, "a company 101 says nothing of contact 101")
	})
}
