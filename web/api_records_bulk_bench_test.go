package web

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// benchBulkBatches and benchPuts are the fewest batches of 1,000 records,
// and single PUTs, one BenchmarkBulkUpsertHTTP run sends.
const (
	benchBulkBatches = 10
	benchPuts        = 1000
)

// BenchmarkBulkUpsertHTTP is BenchmarkBulkUpsert (sync/outbox) end to end:
// new orders, each routed to two services, sent by one client over
// loopback, as POST /api/v1/records batches of 1,000 (records/s; ns/op is
// per record) and, in the same run, one PUT /api/v1/records/{type}/{id}
// each (put-records/s, and x-put = records/s ÷ put-records/s).
func BenchmarkBulkUpsertHTTP(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, open func(testing.TB) *gorm.DB) {
		db := open(b)
		url, token := bulkBenchServer(b, db)
		client := benchClient(b)
		batches := max(benchBulkBatches, (b.N+outbox.MaxBatch-1)/outbox.MaxBatch)

		b.ResetTimer()
		start := time.Now()
		for n := range batches {
			recs := make([]string, outbox.MaxBatch)
			for i := range recs {
				recs[i] = fmt.Sprintf(`{"type":"order","id":"bulk-%d","payload":%s}`, n*outbox.MaxBatch+i, benchPayload(i))
			}
			benchCall(b, client, http.MethodPost, url+"/api/v1/records", token, "["+strings.Join(recs, ",")+"]")
		}
		bulk := time.Since(start)
		b.StopTimer()

		start = time.Now()
		for i := range benchPuts {
			benchCall(b, client, http.MethodPut, fmt.Sprintf("%s/api/v1/records/order/put-%d", url, i), token, benchPayload(i))
		}
		put := time.Since(start)

		var links int64
		if err := db.Model(&models.Link{}).Count(&links).Error; err != nil || links != int64(2*(batches*outbox.MaxBatch+benchPuts)) {
			b.Fatalf("expected two links per record, got %d (%v)", links, err)
		}
		records := float64(batches * outbox.MaxBatch)
		b.ReportMetric(float64(bulk.Nanoseconds())/records, "ns/op")
		b.ReportMetric(records/bulk.Seconds(), "records/s")
		b.ReportMetric(benchPuts/put.Seconds(), "put-records/s")
		b.ReportMetric((records/bulk.Seconds())/(benchPuts/put.Seconds()), "x-put")
	})
}

func benchPayload(i int) string {
	return fmt.Sprintf(`{"title":"Order %d","total":"%d.00","currency":"EUR","customer":{"name":"Customer %d","email":"buyer%d@example.com"}}`,
		i, 10+i%900, i%97, i)
}

// bulkBenchServer serves the API with an engine routing orders to two
// services that are never called (nothing is sent), and returns its URL and
// an API token.
func bulkBenchServer(b *testing.B, db *gorm.DB) (string, string) {
	b.Helper()
	log := slog.New(slog.DiscardHandler)
	cfg := config.Default()
	cfg.Services = map[string]config.Service{}
	var svcs []outbox.Service
	for _, name := range []string{"crm", "crm2"} {
		svc := config.Service{Kind: "http", BaseURL: "http://127.0.0.1:9", Timeout: time.Second,
			Objects: map[string]config.Object{"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key",
				IDField: "id", Create: "POST /deals", Update: "PUT /deals/{external_id}"}}}
		cfg.Services[name] = svc
		svcs = append(svcs, outbox.Service{Name: name, Config: svc, Conn: connector.NewHTTP(name, svc, redact.New(nil), nil)})
	}
	eng := outbox.New(db, svcs, realClock{}, log, outbox.Options{})
	rc, err := inbox.New(db, cfg.Services, realClock{}, log, redact.New(nil))
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Deps{DB: db, Config: cfg, Clock: realClock{}, Log: log, Outbox: eng, Inbox: rc})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	b.Cleanup(srv.Close)
	token, _, err := models.CreateAPIToken(db, "shop", "bench", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return srv.URL, token
}

// benchCall makes one API call and fails the benchmark unless it is a 200.
func benchCall(b *testing.B, client *http.Client, method, url, token, body string) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		b.Fatalf("%s %s: %d %.300s", method, url, res.StatusCode, answer)
	}
}
