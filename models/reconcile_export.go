package models

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// exportBatch is how many discrepancies the CSV export reads per query.
const exportBatch = 500

// DiscrepancyCSVHeader is the CSV export's first row.
var DiscrepancyCSVHeader = []string{"id", "run_id", "kind", "status", "local_type", "local_id",
	"external_key", "external_ids", "link_id", "detail", "created_at"}

// ExportDiscrepanciesCSV writes the discrepancies matching f (f.AfterID and
// f.Limit are ignored) to w as CSV, a header first, reading and flushing them
// in batches so that a run of any size streams in bounded memory.
func ExportDiscrepanciesCSV(ctx context.Context, db *gorm.DB, f DiscrepancyFilter, w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(DiscrepancyCSVHeader); err != nil {
		return err
	}
	f.AfterID, f.Limit = 0, exportBatch
	for {
		batch, err := ListDiscrepancies(db.WithContext(ctx), f)
		if err != nil {
			return fmt.Errorf("export discrepancies of run %d: %w", f.RunID, err)
		}
		for _, d := range batch {
			if err := cw.Write(csvRow(d)); err != nil {
				return err
			}
		}
		cw.Flush()
		if err := cw.Error(); err != nil || len(batch) < exportBatch {
			return err
		}
		f.AfterID = batch[len(batch)-1].ID
	}
}

func csvRow(d Discrepancy) []string {
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
