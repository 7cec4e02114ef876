package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
)

// A failure after the batch's records are written and before the commit
// (here the cursor's own UPDATE fails) leaves neither the records nor the
// cursor: the next drain reads the same rows again.
func TestSourceCursorAndRecordsCommitTogether(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := newBiz(t, "postgres")
		b.createOutbox(t)
		ctx := context.Background()
		for i := range 10 {
			require.NoError(t, b.insert(ctx, b.db, "item", fmt.Sprint(i), payload(i), "upsert"))
		}
		w := newWorld(t, db, nil)
		s := w.source(t, b.outboxSource())
		var fail sync.Mutex // held: the cursor's UPDATE fails
		injected := errors.New("injected: the process dies before the commit")
		require.NoError(t, db.Callback().Update().After("gorm:update").Register("test:fail_cursor", func(tx *gorm.DB) {
			if tx.Statement.Table == "source_cursors" && !fail.TryLock() {
				_ = tx.AddError(injected)
			} else if tx.Statement.Table == "source_cursors" {
				fail.Unlock()
			}
		}))
		fail.Lock()
		err := s.Drain(ctx)
		require.ErrorContains(t, err, "injected")
		require.Empty(t, records(t, db), "the records rolled back with the cursor")
		require.Zero(t, cursor(t, db).LastID)

		fail.Unlock()
		require.NoError(t, s.Drain(ctx))
		require.Len(t, records(t, db), 10)
		c := cursor(t, db)
		require.EqualValues(t, 10, c.LastID)
		require.EqualValues(t, 10, c.RowsRead)
		require.Contains(t, c.LastError, "injected", "the failure stays on the page until the next one")
		require.False(t, c.Failing(), "a read went well since")
	})
}

// Two instances draining the same source at once (as when a lease ran out
// under a slow batch): the cursor's compare-and-set lets one batch of each
// pair commit, so every row counts once and the cursor never goes back.
func TestSourceTwoInstancesCountEachRowOnce(t *testing.T) {
	t.Parallel()
	b := newBiz(t, "mysql")
	b.createOutbox(t)
	url := dbtest.PostgresURL(t)
	ctx := context.Background()
	const rows = 3000
	for i := range rows {
		require.NoError(t, b.insert(ctx, b.db, "item", fmt.Sprint(i%500), payload(i), "upsert"))
	}
	cfg := b.outboxSource()
	cfg.BatchSize = 50
	var sources []*Source
	for range 8 {
		w := newWorld(t, dbtest.Open(t, url), nil) // an instance: its own pool and engine
		sources = append(sources, w.source(t, cfg))
	}
	db := dbtest.Open(t, url)
	done := make(chan struct{})
	var regress error
	go func() { // watches the cursor: it only moves forward
		defer close(done)
		last := int64(0)
		for last < rows {
			c, err := models.GetSourceCursor(db, "shop")
			if err == nil && c.LastID < last {
				regress = fmt.Errorf("the cursor went from %d back to %d", last, c.LastID)
				return
			}
			last = max(last, c.LastID)
		}
	}()
	var wg sync.WaitGroup
	for _, s := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cursor(t, db).LastID < rows {
				_ = s.Drain(ctx) // a lost compare-and-set is an error, and harmless
			}
		}()
	}
	wg.Wait()
	<-done
	require.NoError(t, regress)
	c := cursor(t, db)
	require.EqualValues(t, rows, c.RowsRead, "each row counted in exactly one committed batch")
	got := records(t, db)
	require.Len(t, got, 500)
	for i := range 500 {
		require.EqualValues(t, rows-500+i, got[fmt.Sprint(i)]["n"])
	}
}

// A paused source reads nothing on any instance; resumed, it goes on from
// its cursor.
func TestSourcePauseAndResume(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := newBiz(t, "postgres")
		b.createOutbox(t)
		ctx := context.Background()
		w := newWorld(t, db, nil)
		set, err := Open(ctx, sourceConfig(b), db, w.eng, Options{Log: w.logger})
		require.NoError(t, err)
		t.Cleanup(func() { _ = set.Close() })
		s := set.sources["shop"]
		require.NoError(t, b.insert(ctx, b.db, "item", "1", payload(1), "upsert"))
		require.NoError(t, s.Drain(ctx))

		paused, err := set.Pause(ctx, "shop", "ana@example.com", "  the shop   migrates ")
		require.NoError(t, err)
		require.True(t, paused)
		again, err := set.Pause(ctx, "shop", "bo@example.com", "")
		require.NoError(t, err)
		require.False(t, again, "the first pause holds")
		require.NoError(t, b.insert(ctx, b.db, "item", "2", payload(2), "upsert"))
		require.NoError(t, s.Drain(ctx))
		require.NotContains(t, records(t, db), "2", "a paused source reads nothing")
		st, err := set.States(ctx)
		require.NoError(t, err)
		require.Equal(t, Paused, st[0].State)
		require.Equal(t, "ana@example.com", st[0].PausedBy)
		require.Equal(t, "the shop migrates", st[0].PauseReason)

		resumed, err := set.Resume(ctx, "shop", "ana@example.com")
		require.NoError(t, err)
		require.True(t, resumed)
		require.NoError(t, s.Drain(ctx))
		require.Contains(t, records(t, db), "2")
		require.EqualValues(t, 2, cursor(t, db).RowsRead, "from the cursor: row 1 is not read again")
		_, err = set.Pause(ctx, "nosuch", "ana@example.com", "")
		require.ErrorIs(t, err, models.ErrNotFound)
	})
}

// An outbox id missing from the rows read (its transaction has not
// committed) holds the cursor until it appears; after gap_timeout it is
// skipped, counted and said in words.
func TestSourceGapWaitsThenSkips(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createOutbox(t)
		ctx := context.Background()
		clk := clock.NewFake(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
		w := newWorld(t, db, clk)
		cfg := b.outboxSource()
		s := w.source(t, cfg)
		late, err := b.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, b.insert(ctx, late, "item", "1", payload(1), "upsert")) // id 1, not committed
		require.NoError(t, b.insert(ctx, b.db, "item", "2", payload(2), "upsert")) // id 2
		require.NoError(t, s.Drain(ctx))
		require.Empty(t, records(t, db), "id 2 waits for id 1")
		require.NoError(t, late.Commit())
		require.NoError(t, s.Drain(ctx))
		require.Len(t, records(t, db), 2, "the late commit came within the gap timeout")

		lost, err := b.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, b.insert(ctx, lost, "item", "3", payload(3), "upsert")) // id 3, rolled back below
		require.NoError(t, b.insert(ctx, b.db, "item", "4", payload(4), "upsert"))
		require.NoError(t, lost.Rollback())
		require.NoError(t, s.Drain(ctx))
		require.NotContains(t, records(t, db), "4")
		clk.Advance(cfg.GapTimeout)
		require.NoError(t, s.Drain(ctx))
		require.Contains(t, records(t, db), "4")
		c := cursor(t, db)
		require.EqualValues(t, 4, c.LastID)
		require.EqualValues(t, 1, c.Skipped)
		require.Equal(t, "outbox ids 3 to 3 did not appear within gap_timeout (30s); skipped", c.LastSkip)
		require.Contains(t, w.log.String(), "outbox ids 3 to 3 did not appear")
	})
}

// Rows the engine will not take, or that name an unknown operation, are
// counted and said on the source's row; the cursor passes them and the
// good rows around them are stored.
func TestSourceRefusedRowsDoNotStopIt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := newBiz(t, "mysql")
		b.createOutbox(t)
		ctx := context.Background()
		for _, r := range [][4]string{{"item", "1", payload(1), "upsert"}, {"item", "a b", payload(2), "upsert"},
			{"item", "3", "[1, 2]", "upsert"}, {"gadget", "4", payload(4), "upsert"}, {"item", "5", payload(5), "frobnicate"},
			{"item", "6", payload(6), "upsert"}, {"item", "6", "", "delete"}, {"item", "7", payload(7), ""}} {
			require.NoError(t, b.insert(ctx, b.db, r[0], r[1], r[2], r[3]))
		}
		w := newWorld(t, db, nil)
		s := w.source(t, b.outboxSource())
		require.NoError(t, s.Drain(ctx))
		c := cursor(t, db)
		require.EqualValues(t, 8, c.LastID, "the cursor passes refused rows")
		got := records(t, db)
		require.Contains(t, got, "1")
		require.Contains(t, got, "7", "an empty op is an upsert")
		require.NotContains(t, got, "a b")
		// Row 7 deletes record 6 and is its last row in the batch: record
		// 6 was never stored, so there is nothing to delete and nothing
		// refused.
		require.NotContains(t, got, "6", "the record's last row in the batch wins")
		require.EqualValues(t, 4, c.Refused, c.LastRefusal)
		log := w.log.String()
		require.Contains(t, log, `the operation \"frobnicate\" is not upsert or delete`)
		require.Contains(t, log, "gadget")
		require.Equal(t, Reading, stateOf(c), "refusals do not make the source failing")
	})
}

// A DSN's password reaches neither the log, nor the error kept for the
// page, nor the page's description of the source.
func TestSourceDSNPasswordNeverShown(t *testing.T) {
	db := dbtest.SQLite(t)
	w := newWorld(t, db, nil)
	const password = "Sup3r-secret-pw"
	t.Setenv("SHOP_DSN", "postgres://syncdesk:"+password+"@127.0.0.1:5432/nosuchdb?sslmode=disable&connect_timeout=2")
	cfg := sourceConfigDSN("postgres", "${SHOP_DSN}")
	set, err := Open(context.Background(), cfg, db, w.eng, Options{Log: w.logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = set.Close() })
	err = set.sources["shop"].Drain(context.Background())
	require.Error(t, err)
	require.NotContains(t, err.Error(), password)
	st, err := set.States(context.Background())
	require.NoError(t, err)
	require.Equal(t, Failing, st[0].State)
	require.NotEmpty(t, st[0].LastError)
	require.NotContains(t, fmt.Sprintf("%+v", st[0]), password)
	require.Equal(t, "postgres 127.0.0.1:5432/nosuchdb", st[0].Where)
	require.False(t, strings.Contains(w.log.String(), password), w.log.String())
}

// A MySQL source's session reads and writes TIMESTAMP columns in UTC (the
// driver's Loc alone converts nothing on the server).
func TestMySQLSourceSessionIsInUTC(t *testing.T) {
	t.Parallel()
	b := newBiz(t, "mysql")
	b.createOutbox(t)
	w := newWorld(t, dbtest.SQLite(t), nil)
	s := w.source(t, b.outboxSource())
	var zone string
	require.NoError(t, s.biz.QueryRowContext(context.Background(), "SELECT @@session.time_zone").Scan(&zone))
	require.Equal(t, "+00:00", zone)
}

// A fresh cursor on an outbox table whose ids start high starts at the
// first row present: it waits gap_timeout for lower ids still to commit,
// as for any gap, then reads without counting the ids below as skipped.
// A gap after that is counted as before.
func TestSourceFreshCursorStartsAtTheFirstRow(t *testing.T) {
	t.Parallel()
	eachBiz(t, func(t *testing.T, db *gorm.DB, b biz) {
		b.createOutbox(t)
		restart := "ALTER SEQUENCE syncdesk_outbox_id_seq RESTART WITH 5000000"
		if b.driver == "mysql" {
			restart = "ALTER TABLE syncdesk_outbox AUTO_INCREMENT = 5000000"
		}
		_, err := b.db.Exec(restart)
		require.NoError(t, err)
		ctx := context.Background()
		for i := range 3 {
			require.NoError(t, b.insert(ctx, b.db, "item", fmt.Sprint(i), payload(i), "upsert"))
		}
		clk := clock.NewFake(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
		w := newWorld(t, db, clk)
		cfg := b.outboxSource()
		s := w.source(t, cfg)
		require.NoError(t, s.Drain(ctx))
		require.Empty(t, records(t, db), "a lower id may still commit: waited for, as for a gap")
		clk.Advance(cfg.GapTimeout)
		require.NoError(t, s.Drain(ctx))
		require.Len(t, records(t, db), 3)
		c := cursor(t, db)
		require.EqualValues(t, 5000002, c.LastID)
		require.Zero(t, c.Skipped, "the ids below the first row were never the source's: %s", c.LastSkip)
		require.Empty(t, c.LastSkip)
		require.NotContains(t, w.log.String(), "skipped")

		lost, err := b.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, b.insert(ctx, lost, "item", "3", payload(3), "upsert")) // 5000003, rolled back
		require.NoError(t, lost.Rollback())
		require.NoError(t, b.insert(ctx, b.db, "item", "4", payload(4), "upsert"))
		require.NoError(t, s.Drain(ctx))
		clk.Advance(cfg.GapTimeout)
		require.NoError(t, s.Drain(ctx))
		c = cursor(t, db)
		require.EqualValues(t, 5000004, c.LastID)
		require.EqualValues(t, 1, c.Skipped, "a gap after the first row is counted")
		require.Equal(t, "outbox ids 5000003 to 5000003 did not appear within gap_timeout (30s); skipped", c.LastSkip)
	})
}
