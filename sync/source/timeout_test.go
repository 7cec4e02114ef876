package source

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// A read of the business database that hangs (here on a lock another
// connection holds on the table) is abandoned after read_timeout: the
// source says so as its last error, in words, and the next poll, the lock
// gone, reads. In both modes, each business database.
func TestSourceReadThatHangsIsAbandoned(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createOutbox(t)
		b.createItems(t)
		ctx := context.Background()
		require.NoError(t, b.insert(ctx, b.db, "item", "1", payload(1), "upsert"))
		require.NoError(t, b.insertItem(ctx, b.db, 2, b.now(t).Add(-time.Hour), `{"n": 2}`))
		w := newWorld(t, db, nil)
		table, query := b.outboxSource(), b.changeSource(time.Minute, "query")
		table.ReadTimeout, query.ReadTimeout = time.Second, time.Second
		sources := []*Source{w.source(t, table), w.source(t, query, "query")}

		unlock := b.lockTables(t, "syncdesk_outbox", "items")
		for _, s := range sources {
			// Bounded here so that a read left hanging fails the test
			// instead of holding it until go test's own timeout.
			hung, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := s.Drain(hung)
			cancel()
			require.EqualError(t, err, "read source "+s.Name()+": the read took longer than 1s and was abandoned")
			c := cursorOf(t, db, s.Name())
			require.Equal(t, Failing, stateOf(c))
			require.Equal(t, err.Error(), c.LastError, "the page says why")
		}
		unlock()
		for _, s := range sources {
			require.NoError(t, s.Drain(ctx), "the next poll reads")
			require.Equal(t, Reading, stateOf(cursorOf(t, db, s.Name())))
		}
		require.Len(t, records(t, db), 2)
	})
}

// lockTables holds, on a connection of its own, a lock on the tables that
// makes every other session's read of them wait, until unlock is called
// or the test ends (a lock left held would hold the schema's drop).
func (b biz) lockTables(t testing.TB, tables ...string) (unlock func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := b.db.Conn(ctx)
	require.NoError(t, err)
	release := "ROLLBACK"
	if b.driver == "mysql" {
		release = "UNLOCK TABLES"
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			_, err := conn.ExecContext(ctx, release)
			require.NoError(t, err)
			require.NoError(t, conn.Close())
		})
	}
	t.Cleanup(unlock)
	if b.driver == "mysql" {
		_, err = conn.ExecContext(ctx, "LOCK TABLES "+strings.Join(tables, " WRITE, ")+" WRITE")
		require.NoError(t, err)
		return unlock
	}
	_, err = conn.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "LOCK TABLE "+strings.Join(tables, ", ")+" IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	return unlock
}
