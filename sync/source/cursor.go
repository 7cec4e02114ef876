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

// identity is what this source's cursor must be made for: its mode, and
// the outbox table it reads or its change query's text with its spaces
// folded (a query laid out anew in the file is the same query). Not the
// DSN: hosts and passwords change legitimately.
func (s *Source) identity() (mode, from string) {
	if s.cfg.OutboxMode() {
		return modeTable, s.cfg.Table
	}
	return modeQuery, strings.Join(strings.Fields(s.cfg.Query), " ")
}

// claim reads the source's cursor and makes sure it was made for what the
// source reads now. A cursor that has passed no row, or made before
// cursors said what they read, takes the configured identity; one that has
// moved and was made for another table or query is refused: its position
// means nothing there, and rows before it would be skipped silently.
func (s *Source) claim(ctx context.Context) (models.SourceCursor, error) {
	mode, from := s.identity()
	for range 3 { // another instance may move the cursor in between: read it again
		cur, err := models.GetSourceCursor(s.db.WithContext(ctx), s.name)
		if err != nil || (cur.ReadMode == mode && cur.ReadFrom == from) {
			return cur, err
		}
		if cur.ReadMode != "" && cur.Moved() {
			return cur, s.mismatch(cur)
		}
		ok, err := models.SetSourceIdentity(s.db.WithContext(ctx), s.name, cur.Version, mode, from)
		if err != nil || ok {
			cur.Version, cur.ReadMode, cur.ReadFrom = cur.Version+1, mode, from
			return cur, err
		}
	}
	return models.SourceCursor{}, fmt.Errorf("source %s: %w", s.name, models.ErrCursorMoved)
}

// mismatch says, naming the setting, why a cursor made for another table
// or query cannot be used, and the two ways out.
func (s *Source) mismatch(cur models.SourceCursor) error {
	mode, from := s.identity()
	setting, now := "table", "the outbox table "+from
	if mode == modeQuery {
		setting, now = "query", "the change query "+quoteQuery(from)
		if cur.ReadMode == modeQuery {
			now = "the new change query"
		}
	}
	was, back := "the outbox table "+cur.ReadFrom, "table: "+cur.ReadFrom
	if cur.ReadMode == modeQuery {
		was, back = "the change query "+quoteQuery(cur.ReadFrom), "query: "+quoteQuery(cur.ReadFrom)
		if mode == modeTable {
			back += " (without table:)"
		}
	} else if mode == modeQuery {
		back += " (without query:)"
	}
	return fmt.Errorf("setting sources.%s.%s: the cursor of source %s was kept for %s and has read it %s; "+
		"reading %s on from it would skip rows. "+
		"To read %s from its start, give the source a new name; to go on from the cursor, put back %s",
		s.name, setting, s.name, was, reach(cur), now, now, back)
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
