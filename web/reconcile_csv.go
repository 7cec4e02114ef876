package web

import (
	"context"
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// discrepancyCSVHeader is the CSV export's first row.
var discrepancyCSVHeader = []string{"id", "run_id", "kind", "status", "local_type", "local_id",
	"external_key", "external_ids", "link_id", "detail", "created_at"}

// writeDiscrepanciesCSV writes the discrepancies matching f to w as CSV, a
// header first, flushing each batch as it is read.
func writeDiscrepanciesCSV(ctx context.Context, db *gorm.DB, f models.DiscrepancyFilter, w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(discrepancyCSVHeader); err != nil {
		return err
	}
	return models.EachDiscrepancyBatch(ctx, db, f, func(batch []models.Discrepancy) error {
		for _, d := range batch {
			if err := cw.Write(csvRow(d)); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

func csvRow(d models.Discrepancy) []string {
	link := ""
	if d.LinkID != nil {
		link = strconv.FormatInt(*d.LinkID, 10)
	}
	return []string{strconv.FormatInt(d.ID, 10), strconv.FormatInt(d.RunID, 10), d.Kind, d.Status,
		cell(d.LocalType), cell(d.LocalID), cell(d.ExternalKey), cell(d.ExternalIDs), link, cell(d.Detail),
		d.CreatedAt.UTC().Format(time.RFC3339)}
}

// cell defuses a value a spreadsheet would run as a formula: ids and keys
// come from providers, and a cell starting with = + - @ is code to Excel.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
