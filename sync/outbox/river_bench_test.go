package outbox

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// River's settings in the comparison: the issue's, chosen so that River
// fetches as soon as a slot frees instead of on its 100 ms default.
const (
	riverFetchCooldown = time.Millisecond
	riverWorkers       = 100
)

// BenchmarkSyncVsRiver sets the engine beside a well-kept job queue doing
// the least work an item can need: in each db= sub-run, max(b.N,
// benchLinks) no-op syncs as BenchmarkSync's latency=0ms/transport=inproc
// (the provider's handler called in this process, so neither side pays for
// a socket), then as many River no-op jobs end to end — inserted with
// InsertMany, untimed; timed from the client's Start until the last job is
// completed — on the same database server: a schema of its own on Postgres,
// a file of its own, opened as models.Open opens syncdesk's, on SQLite. It
// reports syncs/s, river_jobs/s and ratio = syncs/s ÷ river_jobs/s; ns/op
// is per sync. The timer runs over both timed parts, so -benchtime=Nx is
// the way to size a run (see README).
func BenchmarkSyncVsRiver(b *testing.B) {
	for _, dialect := range []string{models.SQLite, models.Postgres} {
		b.Run("db="+dialect, func(b *testing.B) {
			b.StopTimer()
			n := max(b.N, benchLinks)
			db := benchDB(b, dialect)
			syncs, _ := syncLinks(b, db, n, 0, true)
			jobs := riverRun(b, dialect, n)

			syncRate, jobRate := float64(n)/syncs.Seconds(), float64(n)/jobs.Seconds()
			b.ReportMetric(float64(syncs.Nanoseconds())/float64(n), "ns/op")
			b.ReportMetric(syncRate, "syncs/s")
			b.ReportMetric(jobRate, "river_jobs/s")
			b.ReportMetric(syncRate/jobRate, "ratio")
		})
	}
}

// riverRun runs n River no-op jobs on a fresh database of the dialect
// beside the benchmark's own, migrated with River's own migrator.
func riverRun(b *testing.B, dialect string, n int) time.Duration {
	b.Helper()
	if dialect == models.SQLite {
		sqlDB := riverSQLite(b)
		count := func(ctx context.Context, q string) (n int, err error) {
			return n, sqlDB.QueryRowContext(ctx, q).Scan(&n)
		}
		return riverNoops(b, riversqlite.New(sqlDB), count, n)
	}
	pool, err := pgxpool.New(context.Background(), dbtest.PostgresURL(b))
	if err != nil {
		b.Fatalf("River's pool: %v", err)
	}
	b.Cleanup(pool.Close)
	count := func(ctx context.Context, q string) (n int, err error) { return n, pool.QueryRow(ctx, q).Scan(&n) }
	return riverNoops(b, riverpgxv5.New(pool), count, n)
}

// riverSQLite is River's SQLite database: a file of its own, with
// syncdesk's connection settings (WAL, synchronous=FULL, busy timeout,
// IMMEDIATE transactions), on one connection as riversqlite's docs advise
// (River's maintenance services otherwise meet SQLITE_BUSY).
func riverSQLite(b *testing.B) *sql.DB {
	b.Helper()
	gdb, err := models.Open("sqlite:" + filepath.Join(b.TempDir(), "river.db"))
	if err != nil {
		b.Fatalf("River's SQLite file: %v", err)
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sqlDB.Close() })
	sqlDB.SetMaxOpenConns(1)
	return sqlDB
}

// migrate runs River's migrations up on the driver's database.
func migrate[TTx any](b *testing.B, driver riverdriver.Driver[TTx]) {
	b.Helper()
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatalf("River's migrator: %v", err)
	}
	if _, err := m.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		b.Fatalf("River's migrations: %v", err)
	}
}

// noopArgs is the job that does nothing.
type noopArgs struct{}

// Kind names the job for River.
func (noopArgs) Kind() string { return "noop" }

// noopWorker completes every job at once.
type noopWorker struct{ river.WorkerDefaults[noopArgs] }

// Work does nothing.
func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// riverNoops inserts n no-op jobs, then starts a client and returns how long
// it took from its Start to the completion of the n-th job. It fails the
// benchmark unless River's table then holds n completed jobs.
func riverNoops[TTx any](b *testing.B, driver riverdriver.Driver[TTx], count func(context.Context, string) (int, error), n int) time.Duration {
	b.Helper()
	migrate(b, driver)
	ctx := context.Background()
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown: riverFetchCooldown,
		Logger:        slog.New(slog.DiscardHandler),
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: riverWorkers}},
		Workers:       workers,
	})
	if err != nil {
		b.Fatalf("River's client: %v", err)
	}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{}}
	}
	if _, err := client.InsertMany(ctx, params); err != nil {
		b.Fatalf("insert %d River jobs: %v", n, err)
	}
	// A channel as long as the run: a full one would drop events.
	completed, cancel := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: n, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancel()

	b.StartTimer()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		b.Fatalf("start River: %v", err)
	}
	timeout := time.After(5 * time.Minute)
	for done := 0; done < n; done++ {
		select {
		case <-completed:
		case <-timeout:
			b.Fatalf("River completed %d of %d jobs in 5 minutes", done, n)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()

	stopCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if err := client.Stop(stopCtx); err != nil {
		b.Fatalf("stop River: %v", err)
	}
	got, err := count(ctx, `SELECT COUNT(*) FROM river_job WHERE state = 'completed'`)
	if err != nil {
		b.Fatalf("count River's completed jobs: %v", err)
	}
	if got != n {
		b.Fatalf("River's table holds %d completed jobs; want %d", got, n)
	}
	return elapsed
}
