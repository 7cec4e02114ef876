package source

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"

	"github.com/syncdesk/syncdesk/sync/config"
)

// A change query's transactions commit out of timestamp order: A takes
// updated_at t1 and commits after B, which took t2 > t1 and was read
// first. The cursor stays reread_window behind the newest seen, so A is
// still read; with no window (the control) it is missed.
func TestSourceChangeQueryLateCommit(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItems(t)
		w := newWorld(t, db, nil)
		t1 := time.Date(2026, 12, 6, 10, 0, 0, 123456000, time.UTC)
		ctx := context.Background()
		a, err := b.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = a.Rollback() }()
		require.NoError(t, b.insertItem(ctx, a, 1, t1, `{"name": "late"}`))
		require.NoError(t, b.insertItem(ctx, b.db, 2, t1.Add(time.Second), `{"name": "early"}`))

		windowed, control := w.source(t, b.changeSource(time.Minute, "shop")), w.source(t, b.changeSource(0, "ctl"), "ctl")
		for _, s := range []*Source{windowed, control} {
			require.NoError(t, s.Drain(ctx))
		}
		require.Contains(t, records(t, db), "2")
		require.NotContains(t, records(t, db), "1", "A has not committed yet")
		require.NoError(t, a.Commit())

		require.NoError(t, control.Drain(ctx))
		require.NotContains(t, records(t, db), "1", "with no re-read window the late commit is missed (the control)")
		require.NoError(t, windowed.Drain(ctx))
		require.Equal(t, "late", records(t, db)["1"]["name"], "the late commit is read within the window")
		c, err := models.GetSourceCursor(db, "shop")
		require.NoError(t, err)
		require.Nil(t, c.LastAt, "the cursor stays the window behind the newest row seen")
		require.EqualValues(t, 1+2, c.RowsRead, "B, then A and B again: rows inside the window are read again, harmlessly")
	})
}

func (b biz) createItems(t testing.TB) {
	t.Helper()
	ddl := `CREATE TABLE items (id BIGINT PRIMARY KEY, updated_at TIMESTAMPTZ NOT NULL, doc JSONB NOT NULL)`
	if b.driver == "mysql" {
		ddl = `CREATE TABLE items (id BIGINT PRIMARY KEY, updated_at DATETIME(6) NOT NULL, doc JSON NOT NULL)`
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
