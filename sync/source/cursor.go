package source

import (
	"context"
	"fmt"
	"strings"

	"github.com/syncdesk/syncdesk/models"
)

// The modes a cursor is made for (models.SourceCursor.ReadMode).
const (
	modeTable = "table"
	modeQuery = "query"
)

// identity is what this source's cursor must be made for: its mode; the
// outbox table it reads or its change query's text with its spaces folded
// (a query laid out anew in the file is the same query); and what it
// counts by, the table's id column or the type of the query's records.
// Not the DSN: hosts and passwords change legitimately.
func (s *Source) identity() models.SourceIdentity {
	if s.cfg.OutboxMode() {
		return models.SourceIdentity{Mode: modeTable, From: s.cfg.Table, By: s.cfg.Columns.ID}
	}
	return models.SourceIdentity{Mode: modeQuery, From: strings.Join(strings.Fields(s.cfg.Query), " "), By: s.cfg.Type}
}

// claim reads the source's cursor and makes sure it was made for what the
// source reads now. A cursor that has passed no row, or made before
// cursors said what they read (or what they count by), takes the
// configured identity; one that has moved and was made for another table,
// query, id column or type is refused: its position means nothing there,
// and rows before it would be skipped silently.
func (s *Source) claim(ctx context.Context) (models.SourceCursor, error) {
	want := s.identity()
	for range 3 { // another instance may move the cursor in between: read it again
		cur, err := models.GetSourceCursor(s.db.WithContext(ctx), s.name)
		have := cur.Identity()
		if err != nil || have == want {
			return cur, err
		}
		if cur.Moved() && have.Mode != "" {
			if have.Mode != want.Mode || have.From != want.From {
				return cur, s.mismatch(cur)
			}
			if have.By != "" {
				return cur, s.countedBy(cur)
			}
		}
		ok, err := models.SetSourceIdentity(s.db.WithContext(ctx), s.name, cur.Version, want)
		if err != nil || ok {
			cur.Version, cur.ReadMode, cur.ReadFrom, cur.ReadBy = cur.Version+1, want.Mode, want.From, want.By
			return cur, err
		}
	}
	return models.SourceCursor{}, fmt.Errorf("source %s: %w", s.name, models.ErrCursorMoved)
}

// mismatch says, naming the setting, why a cursor made for another table
// or query cannot be used, and the two ways out.
func (s *Source) mismatch(cur models.SourceCursor) error {
	want := s.identity()
	setting, now := "table", "the outbox table "+want.From
	if want.Mode == modeQuery {
		setting, now = "query", "the change query "+quoteQuery(want.From)
		if cur.ReadMode == modeQuery {
			now = "the new change query"
		}
	}
	was, back := "the outbox table "+cur.ReadFrom, "table: "+cur.ReadFrom
	if cur.ReadMode == modeQuery {
		was, back = "the change query "+quoteQuery(cur.ReadFrom), "query: "+quoteQuery(cur.ReadFrom)
		if want.Mode == modeTable {
			back += " (without table:)"
		}
	} else if want.Mode == modeQuery {
		back += " (without query:)"
	}
	return fmt.Errorf("setting sources.%s.%s: the cursor of source %s was kept for %s and has read it %s; "+
		"reading %s on from it would skip rows. "+
		"To read %s from its start, give the source a new name; to go on from the cursor, put back %s",
		s.name, setting, s.name, was, reach(cur), now, now, back)
}

// countedBy says, naming the setting, why a cursor that counted the same
// table by another id column, or read the same query's rows as another
// type, cannot be used, and the two ways out.
func (s *Source) countedBy(cur models.SourceCursor) error {
	want := s.identity()
	if want.Mode == modeQuery {
		return fmt.Errorf("setting sources.%s.type: the cursor of source %s was kept for records of type %s and has read "+
			"the change query %s; the rows it passed would never be read as type %s. "+
			"To read them as %s from the start, give the source a new name; to go on from the cursor, put back type: %s",
			s.name, s.name, cur.ReadBy, reach(cur), want.By, want.By, cur.ReadBy)
	}
	return fmt.Errorf("setting sources.%s.columns.id: the cursor of source %s counts the outbox table %s by its column %s "+
		"and has read it %s; counting by %s on from there would skip rows. "+
		"To read the table by %s from its start, give the source a new name; to go on from the cursor, put back columns.id: %s",
		s.name, s.name, want.From, cur.ReadBy, reach(cur), want.By, want.By, cur.ReadBy)
}

// quoteQuery quotes a change query's text in an error.
func quoteQuery(q string) string { return fmt.Sprintf("%q", q) }

// reach says how far a cursor that has moved has read.
func reach(c models.SourceCursor) string {
	if c.LastAt == nil {
		return fmt.Sprintf("up to id %d", c.LastID)
	}
	return fmt.Sprintf("up to updated_at %s, id %d", c.LastAt.UTC().Format("2006-01-02 15:04:05.000000"), c.LastID)
}
