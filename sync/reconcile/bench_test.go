package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
)

// BenchmarkReconcile100k reconciles 100,000 remote objects against 100,000
// links (1% of them drifted) in a dry run, and reports the peak heap seen
// during the run. The sandbox CRM serves from this process and holds every
// object in memory, so the baseline it adds is reported apart:
//
//	go test -run '^$' -bench Reconcile100k -benchtime 1x ./sync/reconcile/
func BenchmarkReconcile100k(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchReconcile(b, dbtest.SQLite(b)) })
	if os.Getenv(dbtest.EnvPostgres) != "" {
		b.Run("postgres", func(b *testing.B) { benchReconcile(b, dbtest.Postgres(b)) })
	}
}

const benchN = 100_000

func benchReconcile(b *testing.B, db *gorm.DB) {
	e := setup(b, db, func(s *config.Service) {
		o := s.Objects["order"]
		o.List = "GET /deals?cursor={cursor}&limit=1000"
		s.Objects["order"] = o
	})
	start := time.Now()
	seedBench(b, e)
	b.Logf("seeded %d objects, records and links in %s", benchN, time.Since(start).Round(time.Millisecond))
	var want int64
	for b.Loop() {
		e.clock.Advance(time.Second)
		sample := sampleHeap()
		run, err := e.rec.Run(context.Background(), "crm", RunOptions{DryRun: true})
		base, peakInuse, peakAlloc := sample()
		require.NoError(b, err)
		require.Equal(b, models.RunCompleted, run.Status)
		require.EqualValues(b, 2*benchN-benchN/100, run.Scanned, "every listed object and every record")
		b.Logf("run: %s", run.FinishedAt.Sub(run.StartedAt))
		d := e.detail(run.ID)
		want = d.All.Total
		b.ReportMetric(float64(peakInuse)/(1<<20), "peak-heapinuse-MB")
		b.ReportMetric(float64(peakAlloc)/(1<<20), "peak-heapalloc-MB")
		b.ReportMetric(float64(peakInuse-min(peakInuse, base))/(1<<20), "run-heap-MB")
		b.ReportMetric(float64(base)/(1<<20), "baseline-heap-MB")
	}
	require.EqualValues(b, 2000, want, "1,000 mismatches and 1,000 missing objects")
}

// seedBench gives the CRM benchN objects and the database a record and a
// successful link for each; every 100th object has a changed title, and
// every 100th (offset by 50) is gone.
func seedBench(b *testing.B, e *env) {
	b.Helper()
	now := e.clock.Now()
	recs := make([]models.Record, 0, 1000)
	links := make([]models.Link, 0, 1000)
	for n := 1; n <= benchN; n++ {
		payload := fmt.Sprintf(`{"title":"Order %d","total":"%d.00"}`, n, 10+n)
		canonical, hash, err := models.CanonicalPayload([]byte(payload))
		require.NoError(b, err)
		title := fmt.Sprint("Order ", n)
		if n%100 == 0 {
			title = "Changed"
		}
		id := e.crm.Insert(map[string]any{"external_key": key(n), "title": title, "total": fmt.Sprintf("%d.00", 10+n)})
		if n%100 == 50 {
			e.crm.Delete(id)
		}
		recs = append(recs, models.Record{LocalType: "order", LocalID: fmt.Sprint(n), Payload: canonical, ContentHash: hash, CreatedAt: now, UpdatedAt: now})
		links = append(links, models.Link{LocalType: "order", LocalID: fmt.Sprint(n), ExternalService: "crm", ExternalKey: key(n),
			ExternalID: id, Status: models.StatusSuccess, PushedHash: hash, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now})
		if len(recs) == cap(recs) || n == benchN {
			require.NoError(b, e.db.Transaction(func(tx *gorm.DB) error {
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
