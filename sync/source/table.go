package source

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
)

// tableReader reads an outbox table in id order. Ids come from a sequence
// or AUTO_INCREMENT, taken when a row is inserted but seen only when its
// transaction commits, so id 11 can be seen before id 10. The cursor
// therefore moves only over a run of ids without a hole; a hole is waited
// for up to the gap timeout (its transaction may still commit), then
// skipped and said so (README "Sources", the gap rule). A fresh cursor
// waits so for the ids below the first row present, then starts at it.
type tableReader struct {
	s   *Source
	cur models.SourceCursor
}

// gap is the first missing outbox id and when it was first seen missing.
type gap struct {
	at    int64
	since time.Time
}

func (r *tableReader) moved(cur models.SourceCursor) { r.cur = cur }

func (r *tableReader) next(ctx context.Context) (batch, error) {
	rows, err := r.s.readTable(ctx, r.cur.LastID)
	if err != nil {
		return batch{}, err
	}
	b := batch{lastID: r.cur.LastID}
	want := r.cur.LastID + 1
	for _, row := range rows {
		if row.pos > want {
			if !r.s.gapOver(want) {
				b.stop = true // wait for the late commit, from this id on
				break
			}
			// A cursor that has passed no row starts at the first row
			// present: the ids below it (a table whose ids start high, or
			// whose old rows the application deleted) were never the
			// source's, and are not counted as skipped.
			if b.lastID != 0 {
				b.skipped += row.pos - want
				b.skipNote = fmt.Sprintf("outbox ids %d to %d did not appear within gap_timeout (%s); skipped", want, row.pos-1, r.s.cfg.GapTimeout)
			}
		}
		b.rows = append(b.rows, row)
		b.lastID, want = row.pos, row.pos+1
	}
	b.caughtUp = !b.stop && len(rows) < r.s.cfg.BatchSize
	b.stop = b.stop || b.caughtUp
	return b, nil
}

// gapOver reports whether the id at has been missing for the gap timeout.
func (s *Source) gapOver(at int64) bool {
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gap.at != at {
		s.gap = gap{at: at, since: now}
	}
	return now.Sub(s.gap.since) >= s.cfg.GapTimeout
}

// readTable reads up to a batch of outbox rows after id, in id order.
func (s *Source) readTable(ctx context.Context, after int64) (_ []row, err error) {
	ctx, done := s.deadline(ctx)
	defer func() { err = done(err) }()
	c := s.cfg.Columns
	op := "NULL"
	if c.Op != config.NoOp {
		op = c.Op
	}
	// Names are checked at start (config: letters, digits and _ only).
	q := fmt.Sprintf("SELECT %s, %s, %s, %s, %s FROM %s WHERE %s > %s ORDER BY %s LIMIT %s",
		c.ID, c.Type, c.LocalID, c.Payload, op, s.cfg.Table, c.ID, s.ph(1), c.ID, s.ph(2))
	rs, err := s.biz.QueryContext(ctx, q, after, s.cfg.BatchSize)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		var op sql.NullString
		if err := rs.Scan(&r.pos, &r.typ, &r.id, &r.payload, &op); err != nil {
			return nil, err
		}
		r.del, r.bad = operation(op.String)
		out = append(out, r)
	}
	return out, rs.Err()
}

// ph is the n-th query parameter in the business database's dialect.
func (s *Source) ph(n int) string {
	if s.cfg.Driver == "mysql" {
		return "?"
	}
	return fmt.Sprintf("$%d", n)
}
