package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/ratelimit"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// benchLinks is the fewest links one BenchmarkSync run syncs, whatever b.N
// says: enough that the start (first claim, 64 new connections) and the tail
// (the last sends) weigh little, so -benchtime=1x gives stable numbers.
const benchLinks = 10000

// benchRawFor is the least time BenchmarkRawWriteTx measures for.
const benchRawFor = 2 * time.Second

// benchConcurrency is the sends in flight, as in the targets.
const benchConcurrency = 64

// BenchmarkSync measures links synced per second: max(b.N, benchLinks) new
// links, each a create of an order on the sandbox CRM served over loopback
// HTTP with the given latency, sent by one engine with 64 sends in flight
// until Drain returns. ns/op is per link. On 0 ms runs the raw rate of one
// small write transaction on the same database is measured just before and
// reported beside it (raw-tx/s, x-raw = syncs/s ÷ raw-tx/s).
//
// transport=tcp is the figure the targets are about. A second run,
// transport=inproc, hands each request straight to the provider's handler
// in this process (the same connector and provider code, no TCP, no HTTP
// framing): the gap between the two is what the loopback round trips cost,
// in CPU that the engine, the provider and the database share.
func BenchmarkSync(b *testing.B) {
	for _, dialect := range []string{models.SQLite, models.Postgres} {
		for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
			for _, transport := range []string{"tcp", "inproc"} {
				name := fmt.Sprintf("db=%s/latency=%dms/transport=%s", dialect, latency.Milliseconds(), transport)
				b.Run(name, func(b *testing.B) { benchSync(b, benchDB(b, dialect), latency, transport == "inproc") })
			}
		}
	}
}

// BenchmarkRawWriteTx measures the rate of the smallest write transaction —
// BEGIN; INSERT of one small row into a scratch table; COMMIT — issued
// through GORM as the engine issues its own, one after another on one
// goroutine, for at least benchRawFor, with the connection settings of
// models.Open (SQLite: WAL, synchronous=FULL, so a commit waits for the
// WAL's sync; Postgres: the server's own, here a WAL flush per commit).
// ns/op is per transaction.
func BenchmarkRawWriteTx(b *testing.B) {
	for _, dialect := range []string{models.SQLite, models.Postgres} {
		b.Run("db="+dialect, func(b *testing.B) {
			n, elapsed := rawWriteTx(b, benchDB(b, dialect), b.N)
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/op")
			b.ReportMetric(float64(n)/elapsed.Seconds(), "tx/s")
		})
	}
}

// benchDB opens a fresh, migrated database of the dialect.
func benchDB(b *testing.B, dialect string) *gorm.DB {
	b.Helper()
	if dialect == models.SQLite {
		return dbtest.SQLite(b)
	}
	if os.Getenv(dbtest.EnvPostgres) == "" {
		b.Skipf("Postgres skipped: set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run it", dbtest.EnvPostgres)
	}
	return dbtest.Postgres(b)
}

func benchSync(b *testing.B, db *gorm.DB, latency time.Duration, inproc bool) {
	b.StopTimer()
	n := max(b.N, benchLinks)
	rawRate := 0.0
	if latency == 0 {
		raw, elapsed := rawWriteTx(b, db, 0)
		rawRate = float64(raw) / elapsed.Seconds()
	}
	elapsed, cpu := syncLinks(b, db, n, latency, inproc)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/op")
	rate := float64(n) / elapsed.Seconds()
	b.ReportMetric(rate, "syncs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/sync")
	if rawRate > 0 {
		b.ReportMetric(rawRate, "raw-tx/s")
		b.ReportMetric(rate/rawRate, "x-raw")
	}
}

// syncLinks enqueues n orders on db, syncs them with one engine to a
// sandbox CRM of the given latency and checks that each was synced once. It
// returns how long the drain took and the process CPU it used; the
// benchmark timer, stopped on entry, runs over the drain only.
func syncLinks(b *testing.B, db *gorm.DB, n int, latency time.Duration, inproc bool) (elapsed, cpu time.Duration) {
	b.Helper()
	eng, crm := benchEngine(b, db, latency, inproc)
	enqueueOrders(b, db, eng, n)

	b.StartTimer()
	start, cpuStart := time.Now(), processCPU()
	if err := eng.Drain(context.Background()); err != nil {
		b.Fatalf("drain: %v", err)
	}
	elapsed, cpu = time.Since(start), processCPU()-cpuStart
	b.StopTimer()

	verifySynced(b, db, crm, n)
	return elapsed, cpu
}

// benchEngine is an engine as main wires it, with 64 sends in flight, to
// the sandbox CRM answering after latency, over loopback TCP or, inproc,
// straight to its handler.
func benchEngine(b *testing.B, db *gorm.DB, latency time.Duration, inproc bool) (*Engine, *sandbox.Provider) {
	b.Helper()
	crm := sandbox.NewCRM(sandbox.Options{Latency: latency})
	srv := httptest.NewServer(crm)
	b.Cleanup(srv.Close)
	svc := Service{Name: "crm", Config: crmConfig(srv.URL)}
	// A timeout would send a link to retry, seconds later, and fail the run:
	// give a busy machine room rather than measure the retry policy.
	svc.Config.Timeout = 10 * time.Second
	var transport http.RoundTripper
	if inproc {
		transport = inprocTransport{crm}
	}
	// Paced as main wires it: through the service's rate limiter, which
	// with no limit configured or learned costs no database round trip.
	gate := ratelimit.New(db, svc.Name, svc.Config.RateLimit, ratelimit.Options{Logger: slog.New(slog.DiscardHandler)})
	svc.Conn = connector.NewHTTP(svc.Name, svc.Config, redact.New(nil), transport).WithGate(gate)
	return New(db, []Service{svc}, clock.Real{}, slog.New(slog.DiscardHandler), Options{Concurrency: benchConcurrency}), crm
}

// enqueueOrders stores n orders and their links as Upsert would, in bulk:
// the setup is not what is measured.
func enqueueOrders(b *testing.B, db *gorm.DB, eng *Engine, n int) {
	b.Helper()
	now := time.Now().UTC()
	recs := make([]models.Record, 0, n)
	links := make([]models.Link, 0, n)
	for i := range n {
		typ, id, body := order(i + 1)
		canonical, hash, err := models.CanonicalPayload([]byte(body))
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, models.Record{LocalType: typ, LocalID: id, Payload: canonical, ContentHash: hash, CreatedAt: now, UpdatedAt: now})
		for _, s := range eng.linkSpecs(typ, id, "") {
			links = append(links, models.Link{LocalType: typ, LocalID: id, ExternalService: s.Service, ExternalKey: s.ExternalKey,
				IdempotencyKey: s.IdempotencyKey, Status: models.StatusNew, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now})
		}
	}
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.CreateInBatches(recs, 500).Error; err != nil {
			return err
		}
		return tx.CreateInBatches(links, 500).Error
	})
	if err != nil {
		b.Fatalf("enqueue %d orders: %v", n, err)
	}
	if len(links) != n {
		b.Fatalf("expected one link per order, got %d links for %d orders", len(links), n)
	}
}

// verifySynced fails the benchmark unless every link is a success and the
// CRM holds exactly one deal per key: a run that synced nothing, or synced
// twice, measured nothing worth a number.
func verifySynced(b *testing.B, db *gorm.DB, crm *sandbox.Provider, n int) {
	b.Helper()
	var total, success int64
	if err := db.Model(&models.Link{}).Count(&total).Error; err != nil {
		b.Fatal(err)
	}
	if err := db.Model(&models.Link{}).Where("status = ?", models.StatusSuccess).Count(&success).Error; err != nil {
		b.Fatal(err)
	}
	if total != int64(n) || success != total {
		b.Fatalf("expected %d links, all success; got %d links, %d success", n, total, success)
	}
	perKey := map[string]int{}
	for _, obj := range crm.Objects() {
		key, _ := obj["external_key"].(string)
		perKey[key]++
	}
	if len(perKey) != n {
		b.Fatalf("expected %d distinct keys on the CRM, got %d", n, len(perKey))
	}
	for i := range n {
		if key := fmt.Sprintf("site_order_%d", i+1); perKey[key] != 1 {
			b.Fatalf("expected exactly one deal with key %s, got %d", key, perKey[key])
		}
	}
}

// rawWriteTx runs at least minTx single-row write transactions, and for at
// least benchRawFor, and returns how many it ran and how long they took.
func rawWriteTx(b *testing.B, db *gorm.DB, minTx int) (int, time.Duration) {
	b.Helper()
	if err := db.Exec(`CREATE TABLE bench_raw_tx (id INTEGER PRIMARY KEY, note TEXT NOT NULL)`).Error; err != nil {
		b.Fatalf("create scratch table: %v", err)
	}
	defer db.Exec(`DROP TABLE bench_raw_tx`)
	start := time.Now()
	n := 0
	for ; n < minTx || time.Since(start) < benchRawFor; n++ {
		err := db.Transaction(func(tx *gorm.DB) error {
			return tx.Exec(`INSERT INTO bench_raw_tx (id, note) VALUES (?, ?)`, n+1, "x").Error
		})
		if err != nil {
			b.Fatalf("write transaction %d: %v", n, err)
		}
	}
	return n, time.Since(start)
}

// inprocTransport hands a request straight to a handler in this process.
// Only the benchmark uses it, beside the real transport: it shows what the
// TCP round trips cost, and is never the figure a target is measured by.
type inprocTransport struct{ h http.Handler }

func (t inprocTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if req.Body != nil {
		req.Body.Close()
	}
	return rec.Result(), nil
}

// processCPU is the CPU time this process has used, user and system: the
// engine's and the in-process provider's, not the database server's. Per
// sync it changes little with the load of a shared machine, unlike syncs/s.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
