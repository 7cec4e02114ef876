package web

import (
	"bytes"
	"context"
	"encoding/csv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// What a provider put in an id or a detail reaches the CSV as text: a
// formula is defused, quotes and commas survive, filters apply.
func TestDiscrepanciesCSVDefusesFormulas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		r := models.ReconciliationRun{Service: "crm", StartedAt: now, HeartbeatAt: &now}
		require.NoError(t, models.StartRun(db, &r))
		require.NoError(t, models.InsertFindings(db, []models.Finding{
			{RunID: r.ID, Kind: discrepancy.DuplicateRemote, Status: models.DiscrepancyReported, LocalType: "order", LocalID: "1",
				ExternalKey: "site_order_1", ExternalIDs: `=HYPERLINK("x"),deal_2`, Detail: `a, "quoted" detail`, CreatedAt: now},
			{RunID: r.ID, Kind: discrepancy.NeverSynced, Status: models.DiscrepancyOpen, LocalType: "order", LocalID: "-2",
				CreatedAt: now},
		}))

		var buf bytes.Buffer
		require.NoError(t, writeDiscrepanciesCSV(context.Background(), db, "crm", models.DiscrepancyFilter{RunID: r.ID}, &buf))
		rows, err := csv.NewReader(&buf).ReadAll()
		require.NoError(t, err)
		require.Len(t, rows, 3, "a header and two rows")
		require.Equal(t, discrepancyCSVHeader, rows[0])
		require.Equal(t, `'=HYPERLINK("x"), deal_2`, rows[1][8], "a formula from a provider is defused")
		require.Equal(t, `a, "quoted" detail`, rows[1][13])
		require.Equal(t, "'-2", rows[2][6], "a leading minus is a formula to a spreadsheet too")
		require.Equal(t, "2026-11-29T12:00:00Z", rows[1][17])

		buf.Reset()
		require.NoError(t, writeDiscrepanciesCSV(context.Background(), db, "crm",
			models.DiscrepancyFilter{RunID: r.ID, Kind: discrepancy.NeverSynced}, &buf))
		rows, err = csv.NewReader(&buf).ReadAll()
		require.NoError(t, err)
		require.Len(t, rows, 2, "filtered by kind")
	})
}
