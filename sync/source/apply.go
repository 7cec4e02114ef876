package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/outbox"
)

// row is one row read from the business database.
type row struct {
	pos     int64 // the outbox id, or the changed row's id
	typ, id string
	payload []byte
	del     bool
	bad     string // why the row is refused before the engine sees it
	// held: syncdesk holds this payload for the record already (a change
	// query's row read again), so it is no change and the engine does not
	// see it, even when the record was deleted since.
	held bool
	// again: the cursor does not pass this row (a change query's row
	// inside the window), so it will be read again; its refusal is said
	// when the cursor passes it, once.
	again bool
}

// batch is what one read found, and where it moves the cursor to.
type batch struct {
	rows     []row
	lastID   int64
	lastAt   *time.Time
	skipped  int64 // outbox ids given up on
	skipNote string
	caughtUp bool // nothing more is waiting
	stop     bool // end the drain after this batch
}

// apply stores a batch's records and moves the cursor past it in one
// transaction of syncdesk's database; a batch that read nothing and moves
// nothing writes no transaction.
func (s *Source) apply(ctx context.Context, cur models.SourceCursor, b batch) error {
	now := s.opts.Clock.Now()
	if len(b.rows) == 0 && b.lastID == cur.LastID && sameTime(b.lastAt, cur.LastAt) {
		if !b.caughtUp {
			return nil // waiting on a gap: nothing to write
		}
		return models.SourceCaughtUp(s.db.WithContext(ctx), s.name, now)
	}
	in, from, refusals := collapse(s.cfg, b.rows)
	adv := models.CursorAdvance{Source: s.name, Version: cur.Version, LastID: b.lastID, LastAt: b.lastAt,
		Read: int64(len(b.rows)), Skipped: b.skipped, SkipNote: b.skipNote, Now: now, CaughtUp: b.caughtUp}
	res, err := s.engine.ApplyBatch(ctx, in, func(tx *gorm.DB) error { return models.AdvanceSourceCursor(tx, adv) })
	if err != nil {
		return fmt.Errorf("store a batch of source %s: %w", s.name, err)
	}
	if b.skipped > 0 {
		s.opts.Log.Warn("source: outbox ids never appeared; skipped", "source", s.name, "detail", b.skipNote)
	}
	for i, a := range res {
		r := from[i]
		// A delete of a record syncdesk never stored (the application
		// created and deleted it before a read saw it) has nothing to do.
		if a.Refused != nil && !r.again && !(r.del && errors.Is(a.Refused, models.ErrNotFound)) {
			refusals = append(refusals, fmt.Sprintf("row %d (%s %s): %v", r.pos, r.typ, r.id, a.Refused))
		}
	}
	return s.refused(ctx, refusals)
}

// refused logs a batch's refused rows and counts them on the source's row,
// with the last one's reason; a refused row does not stop the source.
func (s *Source) refused(ctx context.Context, refusals []string) error {
	if len(refusals) == 0 {
		return nil
	}
	for _, r := range refusals {
		s.opts.Log.Warn("source: row refused", "source", s.name, "row", r)
	}
	last := s.opts.Redactor.TextPrefix(refusals[len(refusals)-1], maxErrorText)
	return models.SourceRefused(s.db.WithContext(ctx), s.name, int64(len(refusals)), last)
}

// collapse turns a batch's rows into the engine's records: the last row of
// each record wins (the outbox holds a row per change, and the engine takes
// a record once per batch), and a row refused here is said in words.
func collapse(cfg config.Source, rows []row) (in []outbox.Incoming, from []row, refusals []string) {
	at := map[[2]string]int{}
	for _, r := range rows {
		r.typ = cfg.LocalType(r.typ)
		if r.bad != "" {
			if !r.again {
				refusals = append(refusals, fmt.Sprintf("row %d (%s %s): %s", r.pos, r.typ, r.id, r.bad))
			}
			continue
		}
		if r.held {
			continue
		}
		rec := outbox.Incoming{Type: r.typ, ID: r.id, Payload: r.payload, Delete: r.del}
		k := [2]string{r.typ, r.id}
		if i, seen := at[k]; seen {
			in[i], from[i] = rec, r
			continue
		}
		at[k] = len(in)
		in, from = append(in, rec), append(from, r)
	}
	return in, from, refusals
}

// operation reads an outbox row's op: empty, upsert, insert or update
// store the payload; delete tombstones the record.
func operation(op string) (del bool, bad string) {
	switch strings.ToLower(strings.TrimSpace(op)) {
	case "", "upsert", "insert", "update":
		return false, ""
	case "delete":
		return true, ""
	}
	return false, fmt.Sprintf("the operation %q is not upsert or delete", op)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
