package outbox

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// BenchmarkLoopbackCeiling measures what bounds BenchmarkSync without any
// database: benchLinks creates from 64 goroutines over loopback TCP to a
// provider answering after the latency, each side bare or ours.
// client=bare posts with Go's HTTP client and reads the answer;
// client=connector is the connector's Create (the excerpts, the
// redaction, the answer decoded). handler=fixed answers 201 with a small
// fixed object; handler=crm is the sandbox CRM, which stores each object.
// client=bare/handler=fixed is the rate of bare HTTP round trips on this
// machine, client and server in one process; no sync can be faster than
// client=connector/handler=crm. At 20 ms, 64 calls in flight would make
// 3,200 calls/s if a round trip took the latency alone: the gap is the
// timer's overshoot and the round trip's work, which the 64 calls, leaving
// and coming back together, do in turns on the machine's cores.
func BenchmarkLoopbackCeiling(b *testing.B) {
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		fixed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if !clock.Sleep(r.Context(), latency) {
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"deal_1","external_key":"site_order_1","title":"Order 1","total":"11.00"}`)
		})
		// Each sub-run meets a CRM of its own, empty, as BenchmarkSync's does.
		handlers := map[string]func() http.Handler{
			"fixed": func() http.Handler { return fixed },
			"crm":   func() http.Handler { return sandbox.NewCRM(sandbox.Options{Latency: latency}) },
		}
		for _, handler := range []string{"fixed", "crm"} {
			for _, client := range []string{"bare", "connector"} {
				b.Run(fmt.Sprintf("latency=%dms/client=%s/handler=%s", latency.Milliseconds(), client, handler), func(b *testing.B) {
					srv := httptest.NewServer(handlers[handler]())
					b.Cleanup(srv.Close)
					create := bareCreate(srv.URL)
					if client == "connector" {
						create = connectorCreate(srv.URL)
					}
					ceiling(b, create)
				})
			}
		}
	}
}

// ceilingBody is the i-th create's body.
func ceilingBody(i int) string {
	return fmt.Sprintf(`{"external_key":"site_order_%d","title":"Order %d","total":"%d.00"}`, i, i, 10+i)
}

// bareCreate posts creates with Go's HTTP client, as the connector's
// transport is set up (keep-alive, up to 128 idle connections).
func bareCreate(url string) func(i int) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	return func(i int) error {
		res, err := client.Post(url+"/deals", "application/json", strings.NewReader(ceilingBody(i)))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		if err := res.Body.Close(); err != nil {
			return err
		}
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("create: HTTP %d", res.StatusCode)
		}
		return nil
	}
}

// connectorCreate sends creates through the connector, as the engine does.
func connectorCreate(url string) func(i int) error {
	cfg := crmConfig(url)
	cfg.Timeout = 10 * time.Second
	conn := connector.NewHTTP("crm", cfg, redact.New(nil), nil)
	return func(i int) error {
		if c := conn.Create(context.Background(), connector.Record{LocalType: "order", Payload: []byte(ceilingBody(i))}, ""); c.Class != connector.OK {
			return fmt.Errorf("create: %s", c.Error)
		}
		return nil
	}
}

// ceiling runs max(b.N, benchLinks) calls of do from benchConcurrency
// goroutines and reports calls per second.
func ceiling(b *testing.B, do func(i int) error) {
	n := max(b.N, benchLinks)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, benchConcurrency)
	b.ResetTimer()
	start := time.Now()
	for range benchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/op")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "calls/s")
}
