package source

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/models"
)

// changeReader reads a change query in (updated_at, id) order. A
// transaction that commits late can hold a row whose updated_at is older
// than rows already read, so the committed cursor moves only over rows
// whose updated_at is reread_window older than the business database's
// clock (on time_zone's wall clock, for an updated_at without a zone),
// read before the drain's first read: such a row's transaction (no
// longer than the window) had committed before that read, so every row
// before it has been read. The rows after the cursor are read again by the
// next drain. The safe point is the database's clock, not the newest
// updated_at read: one row stamped ahead of it (an application server
// whose clock is fast) would otherwise move the cursor past rows whose
// transactions are still open. Within a drain, reading goes on from the
// last row read, so that a drain always ends.
type changeReader struct {
	s    *Source
	cur  models.SourceCursor
	scan *position  // where the next read starts; nil: before every row
	safe *time.Time // rows up to this updated_at have all committed
}

// position is a change query's key.
type position struct {
	at time.Time
	id int64
}

// after reports whether p comes after q; every row comes after nil, the
// start (no time is taken as the start: a database may hold any).
func (p position) after(q *position) bool {
	return q == nil || p.at.After(q.at) || (p.at.Equal(q.at) && p.id > q.id)
}

func newChangeReader(s *Source, cur models.SourceCursor) *changeReader {
	r := &changeReader{s: s}
	r.moved(cur)
	r.scan = r.committed()
	return r
}

func (r *changeReader) moved(cur models.SourceCursor) { r.cur = cur }

// committed is the committed cursor's position; nil before every row.
func (r *changeReader) committed() *position {
	if r.cur.LastAt == nil {
		return nil
	}
	// In UTC, as the rows' keys are read: a Postgres syncdesk database
	// gives the time back in the process's zone, and a business column
	// without a time zone would take that zone's wall clock as UTC's.
	return &position{at: r.cur.LastAt.UTC(), id: r.cur.LastID}
}

func (r *changeReader) next(ctx context.Context) (batch, error) {
	if r.safe == nil {
		now, err := r.s.bizNow(ctx)
		if err != nil {
			return batch{}, fmt.Errorf("read the database's clock: %w", err)
		}
		safe := wallClock(now, r.s.zone).Add(-r.s.cfg.RereadWindow)
		r.safe = &safe
		r.s.countUntimed(ctx)
	}
	rows, keys, err := r.s.readChanges(ctx, r.scan)
	if err != nil {
		return batch{}, err
	}
	if err := r.s.markHeld(ctx, rows); err != nil {
		return batch{}, err
	}
	b := batch{lastID: r.cur.LastID, lastAt: r.cur.LastAt, rows: rows}
	// Keys come in order: the cursor moves to the last one not after the
	// safe point, and the rows after it will be read again.
	for i, k := range keys {
		if k.at.After(*r.safe) {
			rows[i].again = true
			continue
		}
		if k.after(r.committed()) {
			b.lastID, b.lastAt = k.id, &k.at
		}
	}
	if n := len(keys); n > 0 {
		r.scan = &keys[n-1]
	}
	b.caughtUp = len(rows) < r.s.cfg.BatchSize
	b.stop = b.caughtUp
	return b, nil
}

// markHeld marks the rows whose payload syncdesk already holds for their
// record, live or deleted. The window is read again by every poll, so such
// a row is most often one stored before; were it handed to the engine, a
// record deleted through the API since (a delete this mode never sees)
// would come back to life and its objects be created again on every poll.
// Only a row with another payload — a change not stored yet — brings a
// deleted record back, as a write through the API does. The hashes are
// read before the batch's transaction: a record deleted in between is
// brought back only by such a changed row, a change as new as the delete.
func (s *Source) markHeld(ctx context.Context, rows []row) error {
	keys := make([]models.RecordKey, len(rows))
	for i, r := range rows {
		keys[i] = models.RecordKey{LocalType: s.cfg.LocalType(r.typ), LocalID: r.id}
	}
	have, err := models.RecordHashes(s.db.WithContext(ctx), keys)
	if err != nil {
		return err
	}
	for i := range rows {
		stored, ok := have[keys[i]]
		if !ok {
			continue
		}
		// A payload that is not an object has no hash: the engine refuses it.
		if _, hash, err := models.CanonicalPayload(rows[i].payload); err == nil && hash == stored {
			rows[i].held = true
		}
	}
	return nil
}

// bizNow reads the business database's clock, in UTC.
func (s *Source) bizNow(ctx context.Context) (_ time.Time, err error) {
	ctx, done := s.deadline(ctx)
	defer func() { err = done(err) }()
	q := "SELECT now()"
	if s.cfg.Driver == "mysql" {
		q = "SELECT UTC_TIMESTAMP(6)"
	}
	var now time.Time
	if err := s.biz.QueryRowContext(ctx, q).Scan(&now); err != nil {
		return time.Time{}, err
	}
	return now.UTC(), nil
}

// readChanges reads up to a batch of the change query's rows after p
// (nil: from the first). A row whose updated_at is empty has no place in
// the order and is not read (countUntimed says how many there are).
func (s *Source) readChanges(ctx context.Context, p *position) (_ []row, _ []position, err error) {
	ctx, done := s.deadline(ctx)
	defer func() { err = done(err) }()
	where, args := "updated_at IS NOT NULL", []any{}
	if p != nil {
		where = fmt.Sprintf("updated_at > %s OR (updated_at = %s AND id > %s)", s.ph(1), s.ph(2), s.ph(3))
		args = []any{p.at, p.at, p.id}
	}
	// The query is the configured SELECT (checked at start to be one).
	// The query on a line of its own: a trailing -- comment ends there.
	q := fmt.Sprintf("SELECT id, updated_at, payload FROM (\n%s\n) AS syncdesk_changes WHERE %s ORDER BY updated_at, id LIMIT %s",
		s.cfg.Query, where, s.ph(len(args)+1))
	rs, err := s.biz.QueryContext(ctx, q, append(args, s.cfg.BatchSize)...)
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	if err := s.checkZoneless(rs); err != nil {
		return nil, nil, err
	}
	var rows []row
	var keys []position
	for rs.Next() {
		var k position
		var payload []byte
		if err := rs.Scan(&k.id, &k.at, &payload); err != nil {
			return nil, nil, err
		}
		k.at = k.at.UTC()
		rows = append(rows, row{pos: k.id, typ: s.cfg.Type, id: strconv.FormatInt(k.id, 10), payload: payload})
		keys = append(keys, k)
	}
	return rows, keys, rs.Err()
}

// wallClock is the time on zone's wall clock, written as UTC: how an
// updated_at without a zone of its own holds it (time_zone), and how such a
// value is read back (a Postgres timestamp and a MySQL DATETIME come back
// as UTC).
func wallClock(t time.Time, zone *time.Location) time.Time {
	w := t.In(zone)
	return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC)
}

// checkZoneless refuses a time_zone for an updated_at that carries its zone
// (a Postgres timestamptz, or a MySQL TIMESTAMP, which the session reads in
// UTC): such a value is an instant, and shifting the safe point by the
// zone's offset would move the cursor hours early or late. The column's
// type comes with every read's answer, so the check costs nothing.
func (s *Source) checkZoneless(rs *sql.Rows) error {
	if s.cfg.TimeZone == "" {
		return nil
	}
	types, err := rs.ColumnTypes()
	if err != nil {
		return err
	}
	t := types[1].DatabaseTypeName() // Postgres's timestamp without time zone is TIMESTAMP
	if t != "TIMESTAMPTZ" && (t != "TIMESTAMP" || s.cfg.Driver != "mysql") {
		return nil
	}
	return fmt.Errorf("setting sources.%s.time_zone: the query's updated_at is a %s, which holds an instant, not a wall clock: remove time_zone",
		s.name, strings.ToLower(t))
}

// untimedEvery is how often a change query's rows without updated_at are
// counted: a count may cost a scan of the query, where a read does not.
const untimedEvery = time.Minute

// countUntimed counts the change query's rows whose updated_at is empty,
// at most every untimedEvery, and keeps the count for the services page.
// The log says so when the count changes, not on every poll. A failed
// count is logged and does not stop the reading.
func (s *Source) countUntimed(ctx context.Context) {
	now := s.opts.Clock.Now()
	s.mu.Lock()
	due := s.untimedAt.IsZero() || now.Sub(s.untimedAt) >= untimedEvery
	if due {
		s.untimedAt = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	n, err := s.readUntimed(ctx)
	if err != nil {
		s.opts.Log.Warn("source: cannot count the rows whose updated_at is empty", "source", s.name, "err", err)
		return
	}
	changed, err := models.SetSourceUntimed(s.db.WithContext(ctx), s.name, n)
	switch {
	case err != nil:
		s.opts.Log.Warn("source: cannot keep the count of rows whose updated_at is empty", "source", s.name, "err", err)
	case changed && n > 0:
		s.opts.Log.Warn("source: rows left out: their updated_at is empty; each is read once the application sets it",
			"source", s.name, "rows", n)
	case changed:
		s.opts.Log.Info("source: no row is left out for an empty updated_at any more", "source", s.name)
	}
}

// readUntimed counts the change query's rows whose updated_at is empty.
func (s *Source) readUntimed(ctx context.Context) (n int64, err error) {
	ctx, done := s.deadline(ctx)
	defer func() { err = done(err) }()
	q := fmt.Sprintf("SELECT count(*) FROM (\n%s\n) AS syncdesk_changes WHERE updated_at IS NULL", s.cfg.Query)
	err = s.biz.QueryRowContext(ctx, q).Scan(&n)
	return n, err
}
