package source

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// The acceptance: 20,000 outbox rows written by 8 concurrent
// writers while syncdesk reads, the reader stopped at 5 random points —
// alternately a child process killed with SIGKILL and an instance in this
// process whose context is cancelled mid-batch, a new one started in its
// place each time → every record is stored once with its last row's
// payload, no row skipped and none counted twice. One row in eight deletes
// its record: a record whose last row is a delete is not alive (deleted,
// or never stored when its rows were read together).
func TestSourceOutboxSurvivesStops(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"mysql", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			for _, dialect := range []string{models.SQLite, models.Postgres} {
				t.Run(dialect, func(t *testing.T) {
					v := dbtest.SQLitePath(t)
					if dialect == models.Postgres {
						v = dbtest.PostgresURL(t)
					}
					survivesStops(t, v, dbtest.Open(t, v), newBiz(t, driver))
				})
			}
		})
	}
}

func survivesStops(t *testing.T, v string, db *gorm.DB, b biz) {
	const rows, writers, ids, stops = 20000, 8, 3000, 5
	b.createOutbox(t)
	w := newWorld(t, db, nil)
	cfg := b.outboxSource()
	cfg.Poll = 10 * time.Millisecond

	var written atomic.Int64
	writing := writeConcurrently(t, b, rows, writers, ids, &written)
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for i := range stops {
		// Stop each reader once a random share of the rows is written.
		until := int64((i + 1) * rows / (stops + 1))
		until += rnd.Int64N(rows / (stops + 1))
		done := func() bool { return written.Load() >= until }
		if i%2 == 0 {
			killChild(t, v, b, done, rnd)
		} else {
			runUntil(t, w.source(t, cfg), done, rnd)
		}
		t.Logf("stop %d: %d rows written, the cursor after id %d", i+1, written.Load(), cursor(t, db).LastID)
	}
	writing.Wait()
	last := lastRows(t, b)
	drainUntil(t, w.source(t, cfg), db, last.maxID)

	c := cursor(t, db)
	require.Equal(t, int64(rows), c.RowsRead, "each row read into a committed batch exactly once")
	require.Zero(t, c.Skipped, "no row skipped: %s", c.LastSkip)
	require.Zero(t, c.Refused, c.LastRefusal)
	got := records(t, db)
	require.Len(t, got, len(last.payloads))
	for id, n := range last.payloads {
		require.EqualValues(t, n, got[id]["n"], "record %s holds its last row's payload", id)
	}
	require.NotEmpty(t, last.deleted)
	gone := tombstones(t, db)
	for id := range last.deleted {
		require.NotContains(t, got, id, "record %s's last row deletes it", id)
	}
	for id := range gone {
		require.Contains(t, last.deleted, id, "record %s is deleted though its last row is not a delete", id)
	}
	t.Logf("%d records alive, %d whose last row is a delete (%d of them stored and deleted)", len(got), len(last.deleted), len(gone))
}

// envChild holds, in a child reader, syncdesk's --db value, the business
// database's driver and its DSN, separated by spaces.
const envChild = "SYNCDESK_TEST_SOURCE_CHILD"

// childReading is what the child prints once its source is open.
const childReading = "the child reader is reading"

// killChild starts a reader in a child process (this test binary, running
// TestSourceChildReader), and kills it with SIGKILL, wherever it is, at a
// random moment up to 50 ms after done says so — but not before the child
// has opened its source: on a loaded machine the writers can reach done
// before the child has started, and killing it then stops no reader.
func killChild(t *testing.T, v string, b biz, done func() bool, rnd *rand.Rand) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSourceChildReader$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+v+" "+b.driver+" "+b.dsn)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), childReading) {
		require.True(t, time.Now().Before(deadline), "the child did not open the source:\n%s", out.String())
		time.Sleep(5 * time.Millisecond)
	}
	for !done() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Duration(rnd.IntN(50)) * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err := cmd.Wait()
	require.Error(t, err, "the child was killed, not ended: %s", out.String())
}

// TestSourceChildReader is the child killChild starts: it drains the
// source in a loop until it is killed. Run by itself it does nothing.
func TestSourceChildReader(t *testing.T) {
	spec := os.Getenv(envChild)
	if spec == "" {
		t.Skip("the child reader of TestSourceOutboxSurvivesStops")
	}
	parts := strings.SplitN(spec, " ", 3)
	db, err := models.Open(parts[0])
	require.NoError(t, err)
	b := biz{driver: parts[1], dsn: parts[2]}
	cfg := b.outboxSource()
	s := newWorld(t, db, nil).source(t, cfg)
	fmt.Println(childReading)
	for {
		if err := s.Drain(context.Background()); err != nil {
			t.Logf("drain: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writeConcurrently starts writers inserting rows in transactions of 1 to
// 4 rows, each a random one of ids records, payload n its rank in writing;
// one row in eight is a delete of its record.
func writeConcurrently(t *testing.T, b biz, rows, writers, ids int, written *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for wr := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(wr), 11))
			for written.Load() < int64(rows) {
				tx, err := b.db.Begin()
				if err != nil {
					t.Errorf("begin: %v", err)
					return
				}
				k := 1 + rnd.IntN(4)
				for range k {
					n := written.Add(1)
					if n > int64(rows) {
						break
					}
					p, op := payload(int(n)), "upsert"
					if rnd.IntN(8) == 0 {
						p, op = "", "delete"
					}
					if err := b.insert(context.Background(), tx, "item", fmt.Sprint(rnd.IntN(ids)), p, op); err != nil {
						t.Errorf("insert: %v", err)
					}
				}
				if err := tx.Commit(); err != nil {
					t.Errorf("commit: %v", err)
					return
				}
			}
		}()
	}
	return &wg
}

// runUntil drains s in a loop, as the schedule would, until done says so,
// then cancels its context wherever it is, at a random moment up to 50 ms
// later.
func runUntil(t *testing.T, s *Source, done func() bool, rnd *rand.Rand) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			if err := s.Drain(ctx); err != nil && ctx.Err() == nil {
				t.Logf("drain: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !done() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Duration(rnd.IntN(50)) * time.Millisecond)
	cancel()
	<-stopped
}

// latest is the business database's truth: each record's last row.
type latest struct {
	maxID    int64
	payloads map[string]int64    // local id → the n of its last row by outbox id, an upsert
	deleted  map[string]struct{} // the local ids whose last row is a delete
}

func lastRows(t *testing.T, b biz) latest {
	t.Helper()
	q := "SELECT id, local_id, payload, op FROM syncdesk_outbox ORDER BY id"
	rs, err := b.db.Query(q)
	require.NoError(t, err)
	defer rs.Close()
	out := latest{payloads: map[string]int64{}, deleted: map[string]struct{}{}}
	for rs.Next() {
		var id int64
		var local, op string
		var p []byte
		require.NoError(t, rs.Scan(&id, &local, &p, &op))
		out.maxID = id
		if op == "delete" {
			delete(out.payloads, local)
			out.deleted[local] = struct{}{}
			continue
		}
		delete(out.deleted, local)
		var n int64
		_, err := fmt.Sscanf(string(p), `{"n": %d}`, &n)
		require.NoError(t, err, "payload %s", p)
		out.payloads[local] = n
	}
	require.NoError(t, rs.Err())
	return out
}
