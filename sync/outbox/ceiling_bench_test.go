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
// database: benchLinks requests from 64 goroutines over loopback TCP, as
// the connector's transport sends them (keep-alive, up to 128 idle
// connections), to a provider answering after the latency. handler=empty
// answers 201 and nothing more: the rate of bare HTTP round trips on this
// machine, client and server in one process. handler=crm is the
// connector's Create against the sandbox CRM: the same HTTP plus the
// excerpts, the redaction and the provider's work. No sync can be faster
// than handler=crm. At 20 ms, 64 calls in flight would make 3,200 calls/s
// if a round trip took the latency alone: the gap is the timer's overshoot
// and the HTTP round trip, which the 64 calls, leaving and coming back
// together, make in turns on the machine's cores.
func BenchmarkLoopbackCeiling(b *testing.B) {
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		empty := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if !clock.Sleep(r.Context(), latency) {
				return
			}
			w.WriteHeader(http.StatusCreated)
		})
		b.Run(fmt.Sprintf("latency=%dms/handler=empty", latency.Milliseconds()), func(b *testing.B) {
			srv := httptest.NewServer(empty)
			b.Cleanup(srv.Close)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
			ceiling(b, func(i int) error {
				res, err := client.Post(srv.URL+"/deals", "application/json", strings.NewReader(`{"title":"Order 1","total":"11.00"}`))
				if err != nil {
					return err
				}
				_, _ = io.Copy(io.Discard, res.Body)
				return res.Body.Close()
			})
		})
		b.Run(fmt.Sprintf("latency=%dms/handler=crm", latency.Milliseconds()), func(b *testing.B) {
			srv := httptest.NewServer(sandbox.NewCRM(sandbox.Options{Latency: latency}))
			b.Cleanup(srv.Close)
			cfg := crmConfig(srv.URL)
			cfg.Timeout = 10 * time.Second
			conn := connector.NewHTTP("crm", cfg, redact.New(nil), nil)
			ceiling(b, func(i int) error {
				body := fmt.Sprintf(`{"external_key":"site_order_%d","title":"Order %d","total":"%d.00"}`, i, i, 10+i)
				if c := conn.Create(context.Background(), connector.Record{LocalType: "order", Payload: []byte(body)}, ""); c.Class != connector.OK {
					return fmt.Errorf("create: %s", c.Error)
				}
				return nil
			})
		})
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
