package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// benchBulkRecords is the fewest records one BenchmarkBulkUpsert run
// stores through each of the bulk path and the raw INSERT, whatever b.N
// says; benchSingleRecords, the fewest through the single path, which
// commits once a record and so takes far longer per record.
const (
	benchBulkRecords   = 20000
	benchSingleRecords = 2000
)

// BenchmarkBulkUpsert measures records stored and queued per second, each
// order routed to two services (two links a record), on each database:
//
//   - bulk: batches of MaxBatch new records through UpsertBatch, what
//     POST /api/v1/records runs (records/s; ns/op is per record), then the
//     same records again with a field added, as updates (updated-records/s);
//   - single: the same kind of records one Upsert each, what
//     PUT /api/v1/records/{type}/{id} runs (single-records/s, and
//     x-single = bulk ÷ single);
//   - raw: the same rows written by a plain multi-row INSERT of records and
//     then of links, one transaction per 1,000 records, with no conflict
//     handling and no answer per record (raw-records/s, x-raw = bulk ÷ raw).
//
// Run it with
//
//	SYNCDESK_TEST_POSTGRES=postgres://… go test -run '^$' -bench BulkUpsert -benchtime 1x ./sync/outbox/
func BenchmarkBulkUpsert(b *testing.B) {
	for _, dialect := range []string{models.SQLite, models.Postgres} {
		b.Run("db="+dialect, func(b *testing.B) { benchBulkUpsert(b, benchDB(b, dialect)) })
	}
}

func benchBulkUpsert(b *testing.B, db *gorm.DB) {
	b.StopTimer()
	var svcs []Service
	for _, name := range []string{"crm", "crm2"} {
		cfg := crmConfig("http://127.0.0.1:9") // never called: nothing is sent
		svcs = append(svcs, Service{Name: name, Config: cfg, Conn: connector.NewHTTP(name, cfg, redact.New(nil), nil)})
	}
	eng := New(db, svcs, clock.Real{}, slog.New(slog.DiscardHandler), Options{})
	n := max(b.N, benchBulkRecords)
	n += (MaxBatch - n%MaxBatch) % MaxBatch // whole batches

	raw := timed(func() { benchRawInsert(b, db, eng, n) })

	b.StartTimer()
	bulk := timed(func() {
		for start := 0; start < n; start += MaxBatch {
			batch := make([]Incoming, MaxBatch)
			for i := range batch {
				batch[i] = benchOrder("bulk", start+i)
			}
			res, err := eng.UpsertBatch(context.Background(), batch)
			if err != nil {
				b.Fatalf("batch at %d: %v", start, err)
			}
			if !res[0].Changed || !res[len(res)-1].Changed {
				b.Fatalf("batch at %d: new records reported unchanged", start)
			}
		}
	})
	b.StopTimer()

	// The same records again, each with a field added: an update reads the
	// stored rows and notes which fields changed (models.UpsertRecords).
	update := timed(func() {
		for start := 0; start < n; start += MaxBatch {
			batch := make([]Incoming, MaxBatch)
			for i := range batch {
				batch[i] = benchOrder("bulk", start+i)
				batch[i].Payload = append(batch[i].Payload[:len(batch[i].Payload)-1], `,"note":"changed"}`...)
			}
			res, err := eng.UpsertBatch(context.Background(), batch)
			if err != nil {
				b.Fatalf("update batch at %d: %v", start, err)
			}
			if !res[0].Changed || !res[len(res)-1].Changed {
				b.Fatalf("update batch at %d: changed records reported unchanged", start)
			}
		}
	})
	single := timed(func() {
		for i := range benchSingleRecords {
			in := benchOrder("single", i)
			if _, err := eng.Upsert(context.Background(), in.Type, in.ID, in.Payload); err != nil {
				b.Fatalf("upsert %s: %v", in.ID, err)
			}
		}
	})

	var links int64
	if err := db.Model(&models.Link{}).Count(&links).Error; err != nil || links != int64(2*(2*n+benchSingleRecords)) {
		b.Fatalf("expected two links per record, got %d (%v)", links, err)
	}
	rate := float64(n) / bulk.Seconds()
	b.ReportMetric(float64(bulk.Nanoseconds())/float64(n), "ns/op")
	b.ReportMetric(rate, "records/s")
	b.ReportMetric(float64(n)/update.Seconds(), "updated-records/s")
	b.ReportMetric(benchSingleRecords/single.Seconds(), "single-records/s")
	b.ReportMetric(rate/(benchSingleRecords/single.Seconds()), "x-single")
	b.ReportMetric(float64(n)/raw.Seconds(), "raw-records/s")
	b.ReportMetric(rate/(float64(n)/raw.Seconds()), "x-raw")
}

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// benchOrder is an order of a few hundred bytes, keyed apart per path.
func benchOrder(path string, i int) Incoming {
	return Incoming{Type: "order", ID: fmt.Sprintf("%s-%d", path, i), Payload: fmt.Appendf(nil,
		`{"title":"Order %d","total":"%d.00","currency":"EUR","customer":{"name":"Customer %d","email":"buyer%d@example.com"},"lines":[{"sku":"A-%d","qty":2},{"sku":"B-%d","qty":1}]}`,
		i, 10+i%900, i%97, i, i%50, i%30)}
}

// benchRawInsert writes n records and their links as plain multi-row
// INSERTs, the floor a bulk upsert is measured against.
func benchRawInsert(b *testing.B, db *gorm.DB, eng *Engine, n int) {
	b.Helper()
	now := time.Now().UTC()
	for start := 0; start < n; start += MaxBatch {
		recs := make([]models.Record, 0, MaxBatch)
		var links []models.Link
		for i := start; i < start+MaxBatch; i++ {
			in := benchOrder("raw", i)
			canonical, hash, err := models.CanonicalPayload(in.Payload)
			if err != nil {
				b.Fatal(err)
			}
			recs = append(recs, models.Record{LocalType: in.Type, LocalID: in.ID, Payload: canonical, ContentHash: hash, CreatedAt: now, UpdatedAt: now})
			for _, s := range eng.linkSpecs(in.Type, in.ID, "") {
				links = append(links, models.Link{LocalType: in.Type, LocalID: in.ID, ExternalService: s.Service, ExternalKey: s.ExternalKey,
					IdempotencyKey: s.IdempotencyKey, Status: models.StatusNew, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now})
			}
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&recs).Error; err != nil {
				return err
			}
			for chunk := range slices.Chunk(links, 1000) { // as QueueLinks: SQLite's bound-values limit
				if err := tx.Create(&chunk).Error; err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatalf("raw insert at %d: %v", start, err)
		}
	}
}
