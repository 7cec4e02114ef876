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
	"github.com/syncdesk/syncdesk/views"
)

// discrepancyCSVHeader is the CSV export's first row. The kind and the
// status are in the words of the page; the kind's code comes last, for a
// script to filter by.
var discrepancyCSVHeader = []string{"Discrepancy", "Run", "Service", "Kind", "Status", "Record type", "Record id",
	"Key", "Remote ids", "Link", "Field", "Value here", "Value at the service", "Detail",
	"Resolved by", "Resolved at", "How it was resolved", "Found at", "Kind code"}

// writeDiscrepanciesCSV writes the discrepancies matching f of a run of
// service to w as CSV, a header first, flushing each batch as it is read.
// A discrepancy whose object differs in several fields takes one line per
// field, each with both values, so that a spreadsheet can sort and filter
// by field.
func writeDiscrepanciesCSV(ctx context.Context, db *gorm.DB, service string, f models.DiscrepancyFilter, w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(discrepancyCSVHeader); err != nil {
		return err
	}
	return models.EachDiscrepancyBatch(ctx, db, f, func(batch []models.Discrepancy) error {
		for _, d := range batch {
			for _, row := range csvRows(service, d) {
				if err := cw.Write(row); err != nil {
					return err
				}
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

func csvRows(service string, d models.Discrepancy) [][]string {
	link, resolvedAt := "", ""
	if d.LinkID != nil {
		link = strconv.FormatInt(*d.LinkID, 10)
	}
	if d.ResolvedAt != nil {
		resolvedAt = d.ResolvedAt.UTC().Format(time.RFC3339)
	}
	row := views.DiscrepancyRow{Status: d.Status, Resolution: d.Resolution}
	how := ""
	if d.Resolution != "" {
		how = views.ResolutionWord(d.Resolution) + ": " + d.ResolutionNote
	}
	line := func(f views.FieldDiff) []string {
		return []string{strconv.FormatInt(d.ID, 10), strconv.FormatInt(d.RunID, 10), cell(service),
			views.KindLabel(d.Kind), views.DiscrepancyLabel(row.State()),
			cell(d.LocalType), cell(d.LocalID), cell(d.ExternalKey), cell(strings.ReplaceAll(d.ExternalIDs, ",", ", ")), link,
			cell(f.Field), cell(f.Here), cell(f.There), cell(d.Detail),
			cell(d.ResolvedBy), resolvedAt, cell(how), d.CreatedAt.UTC().Format(time.RFC3339), d.Kind}
	}
	diffs := fieldDiffs(d.Differences)
	if len(diffs) == 0 {
		return [][]string{line(views.FieldDiff{})}
	}
	out := make([][]string, len(diffs))
	for i, f := range diffs {
		out[i] = line(f)
	}
	return out
}

// cell defuses a value a spreadsheet would run as a formula: ids and keys
// come from providers, and a cell starting with = + - @ is code to Excel.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
