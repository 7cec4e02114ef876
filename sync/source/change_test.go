package source

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"

	"github.com/syncdesk/syncdesk/sync/config"
)

// A change query's transactions commit out of timestamp order: A takes
// updated_at t1 and commits after B, which took t2 > t1 and was read
// first. The cursor stays reread_window behind the business database's
// clock, so A is still read; with no window (the control) it is missed.
func TestSourceChangeQueryLateCommit(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItems(t)
		w := newWorld(t, db, nil)
		t1 := b.now(t).Add(-10 * time.Second).Truncate(time.Microsecond).Add(123 * time.Microsecond)
		windowed, control := w.source(t, b.changeSource(time.Minute, "shop")), w.source(t, b.changeSource(0, "ctl"), "ctl")
		require.Equal(t, []bool{false, true}, lateCommit(t, db, b, t1, control, windowed),
			"with no re-read window the late commit is missed (the control); within the window it is read")
		c, err := models.GetSourceCursor(db, "shop")
		require.NoError(t, err)
		require.Nil(t, c.LastAt, "the cursor stays the window behind the database's clock")
		require.EqualValues(t, 1+2, c.RowsRead, "B, then A and B again: rows inside the window are read again, harmlessly")
	})
}

// A drain of several batches moves the cursor only to a row reread_window
// older than the business database's clock: rows an earlier batch read are
// no safer for having been read first. Rows t0 to t0+4s (t0 ten seconds
// ago) in batches of 2, a late commit at t0+2.5s → read by the next drain;
// the one row an hour older is passed.
func TestSourceChangeQueryLateCommitAcrossBatches(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItems(t)
		w := newWorld(t, db, nil)
		ctx := context.Background()
		t0 := b.now(t).Add(-10 * time.Second).Truncate(time.Second)
		late, err := b.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = late.Rollback() }()
		require.NoError(t, b.insertItem(ctx, late, 3, t0.Add(2500*time.Millisecond), `{"name": "late"}`))
		require.NoError(t, b.insertItem(ctx, b.db, 10, t0.Add(-time.Hour), `{"name": "old"}`))
		for _, id := range []int64{1, 2, 4, 5} {
			require.NoError(t, b.insertItem(ctx, b.db, id, t0.Add(time.Duration(id-1)*time.Second), `{"name": "on time"}`))
		}
		cfg := b.changeSource(time.Minute, "shop")
		cfg.BatchSize = 2
		s := w.source(t, cfg)
		require.NoError(t, s.Drain(ctx))
		require.Len(t, records(t, db), 5)
		c := cursor(t, db)
		require.EqualValues(t, 10, c.LastID, "the cursor passes the row an hour old, and no other")
		require.NotNil(t, c.LastAt)
		require.True(t, c.LastAt.Equal(t0.Add(-time.Hour)), "cursor at %v", c.LastAt)

		require.NoError(t, late.Commit())
		require.NoError(t, s.Drain(ctx))
		require.Equal(t, "late", records(t, db)["3"]["name"], "the late commit is read by the next drain")
	})
}

// A row whose updated_at is ahead of the business database's clock (the
// application server's clock is fast) does not move the safe point: the
// cursor stays reread_window behind the database's clock, not behind the
// newest updated_at, so a late commit inside the window is still read.
func TestSourceChangeQueryRowFromTheFuture(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItems(t)
		w := newWorld(t, db, nil)
		ctx := context.Background()
		now := b.now(t)
		late, err := b.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = late.Rollback() }()
		require.NoError(t, b.insertItem(ctx, late, 1, now.Add(-20*time.Second), `{"name": "late"}`))
		require.NoError(t, b.insertItem(ctx, b.db, 2, now.Add(-10*time.Second), `{"name": "on time"}`))
		require.NoError(t, b.insertItem(ctx, b.db, 3, now.Add(time.Hour), `{"name": "fast clock"}`))
		s := w.source(t, b.changeSource(time.Minute, "shop"))
		require.NoError(t, s.Drain(ctx))
		require.Len(t, records(t, db), 2)

		require.NoError(t, late.Commit())
		require.NoError(t, s.Drain(ctx))
		require.Equal(t, "late", records(t, db)["1"]["name"], "the late commit is read")
		require.Nil(t, cursor(t, db).LastAt, "no row is a window older than the database's clock")
	})
}

// A record deleted through the API stays deleted when the change query
// reads its row again inside the window (the row is no newer than what was
// stored): no link is queued for it. A change of the row afterwards (a new
// payload) brings it back, as a write through the API would.
func TestSourceChangeQueryRereadKeepsADelete(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItems(t)
		w := newWorld(t, db, nil)
		ctx := context.Background()
		require.NoError(t, b.insertItem(ctx, b.db, 42, b.now(t).Add(-5*time.Second), `{"name": "first"}`))
		s := w.source(t, b.changeSource(time.Minute, "shop"))
		require.NoError(t, s.Drain(ctx))
		require.Contains(t, records(t, db), "42")

		_, err := w.eng.Delete(ctx, "item", "42")
		require.NoError(t, err)
		before := links(t, db)
		require.NotEmpty(t, before)
		require.NoError(t, s.Drain(ctx))
		require.NoError(t, s.Drain(ctx))
		require.True(t, tombstones(t, db)["42"], "a re-read of the row does not undo the delete")
		require.Equal(t, before, links(t, db), "no push is queued by a re-read")

		require.NoError(t, b.updateItem(ctx, 42, b.now(t), `{"name": "second"}`))
		require.NoError(t, s.Drain(ctx))
		require.Equal(t, "second", records(t, db)["42"]["name"], "a change of the row brings the record back")
		require.NotEqual(t, before, links(t, db), "and queues its push")
	})
}

// A row refused (its payload is not an object) is counted and logged once,
// however many polls read it again inside the window: when the cursor
// passes it.
func TestSourceChangeQueryRefusesARowOnce(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItems(t)
		w := newWorld(t, db, nil)
		ctx := context.Background()
		at := b.now(t)
		require.NoError(t, b.insertItem(ctx, b.db, 7, at, `[1, 2]`))
		const window = 2 * time.Second
		s := w.source(t, b.changeSource(window, "shop"))
		for range 3 {
			require.NoError(t, s.Drain(ctx))
		}
		require.LessOrEqual(t, cursor(t, db).Refused, int64(1), "three reads inside the window")
		time.Sleep(window - b.now(t).Sub(at) + 100*time.Millisecond) // past the window
		for range 2 {
			require.NoError(t, s.Drain(ctx))
		}
		c := cursor(t, db)
		require.EqualValues(t, 1, c.Refused, "the row is counted once")
		require.Contains(t, c.LastRefusal, "row 7")
		require.EqualValues(t, 7, c.LastID, "the cursor has passed it")
		require.Equal(t, 1, strings.Count(w.log.String(), "row refused"), "and logged once: %s", w.log.String())
	})
}

// links reads every link, in id order.
func links(t testing.TB, db *gorm.DB) []models.Link {
	t.Helper()
	var out []models.Link
	require.NoError(t, db.Order("id").Find(&out).Error)
	return out
}

// A change query may end in a -- comment: the query syncdesk wraps around
// it still ends where it should.
func TestSourceChangeQueryEndingInAComment(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItems(t)
		ctx := context.Background()
		require.NoError(t, b.insertItem(ctx, b.db, 1, time.Now().Add(-time.Hour), `{"name": "one"}`))
		cfg := b.changeSource(time.Minute, "shop")
		cfg.Query += " -- every item"
		require.NoError(t, newWorld(t, db, nil).source(t, cfg).Drain(ctx))
		require.Contains(t, records(t, db), "1")
	})
}

// An updated_at without a zone of its own, written on the wall clock of a
// zone behind UTC (a Postgres timestamp, a MySQL DATETIME set with NOW() on
// a server in New York). With time_zone, the safe point is read on that
// clock, and a late commit inside the window is read. Without it (the
// control), every row looks hours old on UTC's clock: the cursor passes the
// row read first and the late commit is lost.
func TestSourceChangeQueryOnAZonesWallClock(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItemsAt(t, "TIMESTAMP", "DATETIME(6)")
		w := newWorld(t, db, nil)
		t1 := wallClock(b.now(t), ny).Add(-10 * time.Second).Truncate(time.Microsecond)
		zoned := b.changeSource(time.Minute, "shop")
		zoned.TimeZone = "America/New_York"
		windowed, control := w.source(t, zoned), w.source(t, b.changeSource(time.Minute, "ctl"), "ctl")
		require.Equal(t, []bool{false, true}, lateCommit(t, db, b, t1, control, windowed),
			"read on UTC's clock, the late commit is missed (the control); on New York's, it is read within the window")
		require.Nil(t, cursor(t, db).LastAt, "the cursor stays the window behind New York's clock")
	})
}

// time_zone is refused for an updated_at that holds an instant (a Postgres
// timestamptz, a MySQL TIMESTAMP): the read stops with the setting named,
// and nothing is read on a shifted clock.
func TestSourceChangeQueryTimeZoneOnlyForAWallClock(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItemsAt(t, "TIMESTAMPTZ", "TIMESTAMP(6)")
		ctx := context.Background()
		require.NoError(t, b.insertItem(ctx, b.db, 1, b.now(t).Add(-time.Hour), `{"name": "an hour ago"}`))
		cfg := b.changeSource(time.Minute, "shop")
		cfg.TimeZone = "Europe/Kyiv"
		err := newWorld(t, db, nil).source(t, cfg).Drain(ctx)
		require.ErrorContains(t, err, "setting sources.shop.time_zone: the query's updated_at is a timestamp")
		require.Empty(t, records(t, db))
	})
}

// lateCommit plays a change query's transactions committing out of
// timestamp order: A takes updated_at at and commits after B, which took
// at+1s and is read first. Every source drains before A commits, then each
// in turn after; it reports whether A was stored after each one's drain.
func lateCommit(t *testing.T, db *gorm.DB, b biz, at time.Time, sources ...*Source) []bool {
	t.Helper()
	ctx := context.Background()
	a, err := b.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = a.Rollback() }()
	require.NoError(t, b.insertItem(ctx, a, 1, at, `{"name": "late"}`))
	require.NoError(t, b.insertItem(ctx, b.db, 2, at.Add(time.Second), `{"name": "early"}`))
	for _, s := range sources {
		require.NoError(t, s.Drain(ctx))
	}
	require.Contains(t, records(t, db), "2")
	require.NotContains(t, records(t, db), "1", "A has not committed yet")
	require.NoError(t, a.Commit())
	read := make([]bool, len(sources))
	for i, s := range sources {
		require.NoError(t, s.Drain(ctx))
		rec, ok := records(t, db)["1"]
		read[i] = ok && rec["name"] == "late"
	}
	return read
}

// The cursor's time goes back to the business database in UTC, whatever
// zone syncdesk's database handed it back in (Postgres: the process's).
func TestChangeCursorIsInUTC(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.FixedZone("UTC+2", 2*3600))
	r := &changeReader{cur: models.SourceCursor{LastID: 7, LastAt: &at}}
	p := r.committed()
	require.Equal(t, time.UTC, p.at.Location())
	require.Equal(t, 10, p.at.Hour(), "the same instant, on UTC's clock")
	require.True(t, p.at.Equal(at))
}

// now is the business database's clock, in UTC.
func (b biz) now(t testing.TB) time.Time {
	t.Helper()
	q := "SELECT now()"
	if b.driver == "mysql" {
		q = "SELECT UTC_TIMESTAMP(6)"
	}
	var at time.Time
	require.NoError(t, b.db.QueryRow(q).Scan(&at))
	return at.UTC()
}

func (b biz) createItems(t testing.TB) { b.createItemsAt(t, "TIMESTAMPTZ", "DATETIME(6)") }

// createItemsAt makes the items table with updated_at of a type per driver.
func (b biz) createItemsAt(t testing.TB, postgres, mysql string) {
	t.Helper()
	ddl := `CREATE TABLE items (id BIGINT PRIMARY KEY, updated_at ` + postgres + ` NOT NULL, doc JSONB NOT NULL)`
	if b.driver == "mysql" {
		ddl = `CREATE TABLE items (id BIGINT PRIMARY KEY, updated_at ` + mysql + ` NOT NULL, doc JSON NOT NULL)`
	}
	_, err := b.db.Exec(ddl)
	require.NoError(t, err)
}

func (b biz) insertItem(ctx context.Context, q execer, id int64, at time.Time, doc string) error {
	stmt := "INSERT INTO items (id, updated_at, doc) VALUES ($1, $2, $3)"
	if b.driver == "mysql" {
		stmt = "INSERT INTO items (id, updated_at, doc) VALUES (?, ?, ?)"
	}
	_, err := q.ExecContext(ctx, stmt, id, at, doc)
	return err
}

func (b biz) updateItem(ctx context.Context, id int64, at time.Time, doc string) error {
	stmt := "UPDATE items SET updated_at = $1, doc = $2 WHERE id = $3"
	if b.driver == "mysql" {
		stmt = "UPDATE items SET updated_at = ?, doc = ? WHERE id = ?"
	}
	_, err := b.db.ExecContext(ctx, stmt, at, doc, id)
	return err
}

// changeSource reads items as item records; name only tells two sources
// on one syncdesk database apart (their cursors).
func (b biz) changeSource(window time.Duration, name string) config.Source {
	cfg := config.Default()
	cfg.Services = services()
	cfg.Sources = map[string]config.Source{name: {Driver: b.driver, DSN: b.dsn, Type: "item", RereadWindow: window,
		Query: "SELECT id, updated_at, doc AS payload FROM items"}}
	if err := cfg.Complete(); err != nil {
		panic(err)
	}
	src := cfg.Sources[name]
	src.RereadWindow = window // 0 too, which configuration reads as the default
	return src
}
