package reconcile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// BenchmarkReconcile100k reconciles 100,000 remote objects against 100,000
// records and links (2% drifted: 1,000 titles changed, 1,000 objects gone)
// in a dry run, and reports the peak heap sampled during the run.
//
// The sandbox CRM runs in a child process (this test binary, re-executed):
// in one process its 100,000 objects would be most of the heap measured,
// and the garbage collector's headroom over them the rest.
//
//	go test -run '^$' -bench Reconcile100k -benchtime 1x ./sync/reconcile/
func BenchmarkReconcile100k(b *testing.B) {
	url := startSandboxProcess(b, benchN)
	b.Run("sqlite", func(b *testing.B) { benchReconcile(b, dbtest.SQLite(b), url) })
	if os.Getenv(dbtest.EnvPostgres) != "" {
		b.Run("postgres", func(b *testing.B) { benchReconcile(b, dbtest.Postgres(b), url) })
	}
}

const (
	benchN          = 100_000
	envBenchSandbox = "SYNCDESK_BENCH_SANDBOX" // set: this process serves the bench's sandbox
)

// TestMain serves the benchmark's sandbox when asked to, and runs the tests otherwise.
func TestMain(m *testing.M) {
	if n := os.Getenv(envBenchSandbox); n != "" {
		serveBenchSandbox(n)
		return
	}
	os.Exit(m.Run())
}

func benchReconcile(b *testing.B, db *gorm.DB, url string) {
	svc := crmConfig(url)
	o := svc.Objects["order"]
	o.List = "GET /deals?cursor={cursor}&limit=1000"
	svc.Objects["order"] = o
	clk := clock.NewFake(epoch)
	start := time.Now()
	seedBenchDB(b, db, clk.Now())
	b.Logf("seeded %d records and links in %s", benchN, time.Since(start).Round(time.Millisecond))
	rec := New(db, []Service{{Name: "crm", Config: svc, Conn: connector.NewHTTP("crm", svc, redact.New(nil), nil)}},
		clk, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{})
	for b.Loop() {
		clk.Advance(time.Second)
		sample := sampleHeap()
		run, err := rec.Run(context.Background(), "crm", RunOptions{DryRun: true})
		base, peakInuse, peakAlloc := sample()
		require.NoError(b, err)
		require.Equal(b, models.RunCompleted, run.Status)
		require.EqualValues(b, 2*benchN-benchN/100, run.Scanned, "every listed object and every record")
		d, err := models.RunDetailByID(db, run.ID)
		require.NoError(b, err)
		require.Equal(b, map[string]int64{discrepancy.FieldMismatch: benchN / 100, discrepancy.MissingRemote: benchN / 100}, totals(d))
		b.ReportMetric(float64(peakInuse)/(1<<20), "peak-heapinuse-MB")
		b.ReportMetric(float64(peakAlloc)/(1<<20), "peak-heapalloc-MB")
		b.ReportMetric(float64(base)/(1<<20), "before-heapinuse-MB")
	}
}

// benchObject is the n-th object the bench's sandbox holds, its title
// changed on every 100th.
func benchObject(n int) map[string]any {
	title := fmt.Sprint("Order ", n)
	if n%100 == 0 {
		title = "Changed"
	}
	return map[string]any{"external_key": key(n), "title": title, "total": fmt.Sprintf("%d.00", 10+n)}
}

// serveBenchSandbox fills a CRM with n objects (ids deal_1…deal_n, every
// 100th offset by 50 deleted again), prints its URL, and serves it until
// its stdin closes.
func serveBenchSandbox(arg string) {
	n, _ := strconv.Atoi(arg)
	crm := sandbox.NewCRM(sandbox.Options{})
	for i := 1; i <= n; i++ {
		id := crm.Insert(benchObject(i))
		if i%100 == 50 {
			crm.Delete(id)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	go func() { _ = http.Serve(ln, crm) }()
	fmt.Println("URL http://" + ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent's end of the pipe closes when it is done
}

// startSandboxProcess starts the bench's sandbox in a child process and
// returns its URL; the child is stopped when the benchmark ends.
func startSandboxProcess(b *testing.B, n int) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), envBenchSandbox+"="+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	cmd.Stderr = os.Stderr
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(b, err)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "URL ")
	require.True(b, ok, "the sandbox process said %q", line)
	return url
}

// seedBenchDB stores a record and a successful link per bench object.
func seedBenchDB(b *testing.B, db *gorm.DB, now time.Time) {
	b.Helper()
	recs := make([]models.Record, 0, 1000)
	links := make([]models.Link, 0, 1000)
	for n := 1; n <= benchN; n++ {
		canonical, hash, err := models.CanonicalPayload([]byte(orderPayload(n)))
		require.NoError(b, err)
		recs = append(recs, models.Record{LocalType: "order", LocalID: fmt.Sprint(n), Payload: canonical, ContentHash: hash,
			CreatedAt: now, UpdatedAt: now})
		links = append(links, models.Link{LocalType: "order", LocalID: fmt.Sprint(n), ExternalService: "crm", ExternalKey: key(n),
			ExternalID: fmt.Sprint("deal_", n), Status: models.StatusSuccess, PushedHash: hash, NextAttemptAt: now,
			CreatedAt: now, UpdatedAt: now})
		if len(recs) == cap(recs) || n == benchN {
			require.NoError(b, db.Transaction(func(tx *gorm.DB) error {
				return errors.Join(tx.CreateInBatches(recs, 500).Error, tx.CreateInBatches(links, 400).Error)
			}))
			recs, links = recs[:0], links[:0]
		}
	}
}

// sampleHeap samples the heap every 2 ms until the returned function is
// called, which reports the heap in use before the run and the peaks of
// HeapInuse and HeapAlloc during it.
func sampleHeap() func() (base, peakInuse, peakAlloc uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base, peakInuse, peakAlloc := m.HeapInuse, m.HeapInuse, m.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peakInuse, peakAlloc = max(peakInuse, m.HeapInuse), max(peakAlloc, m.HeapAlloc)
			}
		}
	}()
	return func() (uint64, uint64, uint64) {
		close(done)
		wg.Wait()
		return base, peakInuse, peakAlloc
	}
}
