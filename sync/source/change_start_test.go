package source

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/sync/clock"
)

// A fresh change query cursor starts before every row: rows stamped at or
// before 1970-01-01 00:00:01 (a default, a migration's placeholder) are
// read like any other.
func TestSourceChangeQueryReadsTheOldestRows(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItems(t)
		ctx := context.Background()
		epoch := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
		for id, at := range map[int64]time.Time{1: epoch.AddDate(-10, 0, 0), 2: epoch, 3: epoch.Add(time.Second),
			4: epoch.Add(1500 * time.Millisecond), 5: b.now(t).Add(-time.Hour)} {
			require.NoError(t, b.insertItem(ctx, b.db, id, at, `{"name": "x"}`))
		}
		w := newWorld(t, db, nil)
		require.NoError(t, w.source(t, b.changeSource(time.Minute, "shop")).Drain(ctx))
		require.Len(t, records(t, db), 5, "every row is read, the oldest first")
		c := cursor(t, db)
		require.EqualValues(t, 5, c.LastID)
		require.EqualValues(t, 5, c.RowsRead)
	})
}

// Rows whose updated_at is empty have no place in the order the change
// query is read in: they are left out, counted on the source's row for the
// page and said in the log when the count changes, not on every poll; a
// row is read once the application sets its updated_at.
func TestSourceChangeQueryCountsRowsWithoutUpdatedAt(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createItems(t)
		nullable := "ALTER TABLE items ALTER COLUMN updated_at DROP NOT NULL"
		if b.driver == "mysql" {
			nullable = "ALTER TABLE items MODIFY updated_at DATETIME(6) NULL"
		}
		_, err := b.db.Exec(nullable)
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, b.insertItem(ctx, b.db, 1, b.now(t).Add(-time.Hour), `{"name": "timed"}`))
		for _, id := range []int64{2, 3} {
			require.NoError(t, b.insertItemUntimed(ctx, id, `{"name": "untimed"}`))
		}
		clk := clock.NewFake(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
		w := newWorld(t, db, clk)
		s := w.source(t, b.changeSource(time.Minute, "shop"))
		for range 3 {
			require.NoError(t, s.Drain(ctx))
		}
		require.Equal(t, []string{"1"}, keys(records(t, db)))
		require.EqualValues(t, 2, cursor(t, db).Untimed, "the page says how many rows are left out")
		leftOut := func() int { return strings.Count(w.log.String(), "rows left out: their updated_at is empty") }
		require.Equal(t, 1, leftOut(), "said once, not on every poll: %s", w.log.String())
		require.Contains(t, w.log.String(), "rows=2")

		require.NoError(t, b.updateItem(ctx, 2, b.now(t), `{"name": "timed now"}`))
		require.NoError(t, s.Drain(ctx))
		require.Equal(t, "timed now", records(t, db)["2"]["name"], "read once its updated_at is set")
		clk.Advance(untimedEvery)
		require.NoError(t, s.Drain(ctx))
		require.EqualValues(t, 1, cursor(t, db).Untimed, "counted again a minute later")
		require.Equal(t, 2, leftOut(), "the new count is said")
	})
}

func (b biz) insertItemUntimed(ctx context.Context, id int64, doc string) error {
	stmt := "INSERT INTO items (id, doc) VALUES ($1, $2)"
	if b.driver == "mysql" {
		stmt = "INSERT INTO items (id, doc) VALUES (?, ?)"
	}
	_, err := b.db.ExecContext(ctx, stmt, id, doc)
	return err
}

// keys are a map's keys, sorted.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
