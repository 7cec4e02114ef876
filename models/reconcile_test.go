package models_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
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
		kind, status := models.KindNeverSynced, models.DiscrepancyFixed
		switch {
		case i < 2:
			kind, status = models.KindDuplicateRemote, models.DiscrepancyReported
		case i < 3:
			kind, status = models.KindMissingRemote, models.DiscrepancyOpen
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
		require.Len(t, d.Kinds, len(models.DiscrepancyKinds), "every kind, zeros included")
		require.Equal(t, models.KindCount{Open: 1, Fixed: 4, Reported: 2, Total: 7}, d.All)
		for _, k := range d.Kinds {
			want := map[string]models.KindCount{
				models.KindDuplicateRemote: {Kind: models.KindDuplicateRemote, Reported: 2, Total: 2},
				models.KindMissingRemote:   {Kind: models.KindMissingRemote, Open: 1, Total: 1},
				models.KindNeverSynced:     {Kind: models.KindNeverSynced, Fixed: 4, Total: 4},
			}[k.Kind]
			want.Kind = k.Kind
			require.Equal(t, want, k)
		}
		_, err = models.RunDetailByID(db, id+100)
		require.ErrorIs(t, err, models.ErrNotFound)
	})
}

func TestDiscrepancyPagesAndCSV(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		id := seedRuns(t, db)
		var seen []string
		for after := int64(0); ; {
			page, err := models.ListDiscrepancies(db, models.DiscrepancyFilter{RunID: id, Kind: models.KindNeverSynced, AfterID: after, Limit: 3})
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

		var buf bytes.Buffer
		require.NoError(t, models.ExportDiscrepanciesCSV(context.Background(), db, models.DiscrepancyFilter{RunID: id}, &buf))
		rows, err := csv.NewReader(&buf).ReadAll()
		require.NoError(t, err)
		require.Len(t, rows, 8, "a header and seven rows")
		require.Equal(t, models.DiscrepancyCSVHeader, rows[0])
		require.Equal(t, "'=HYPERLINK(\"x\"),deal_2", rows[1][7], "a formula from a provider is defused")
		require.Equal(t, "a, \"quoted\" detail", rows[1][9])

		buf.Reset()
		require.NoError(t, models.ExportDiscrepanciesCSV(context.Background(), db,
			models.DiscrepancyFilter{RunID: id, Kind: models.KindDuplicateRemote}, &buf))
		rows, err = csv.NewReader(&buf).ReadAll()
		require.NoError(t, err)
		require.Len(t, rows, 3, "filtered by kind")
	})
}

// An export longer than one batch streams every row once.
func TestCSVExportSpansBatches(t *testing.T) {
	db := dbtest.SQLite(t)
	now := time.Now().UTC()
	r := models.ReconciliationRun{Service: "crm", StartedAt: now, HeartbeatAt: &now}
	require.NoError(t, models.StartRun(db, &r))
	fs := make([]models.Finding, 1234)
	for i := range fs {
		fs[i] = models.Finding{RunID: r.ID, Kind: models.KindNeverSynced, Status: models.DiscrepancyOpen,
			LocalType: "order", LocalID: fmt.Sprint(i), CreatedAt: now}
	}
	require.NoError(t, models.InsertFindings(db, fs))
	var buf bytes.Buffer
	require.NoError(t, models.ExportDiscrepanciesCSV(context.Background(), db, models.DiscrepancyFilter{RunID: r.ID}, &buf))
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1235)
	ids := map[string]bool{}
	for _, row := range rows[1:] {
		ids[row[5]] = true
	}
	require.Len(t, ids, 1234, "no row twice, none missing")
}
