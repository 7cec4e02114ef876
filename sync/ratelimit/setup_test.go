package ratelimit

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
)

// instances opens n handles on one fresh, migrated database of the
// dialect, each with its own connections, as n syncdesk instances would.
func instances(t testing.TB, dialect string, n int) []*gorm.DB {
	t.Helper()
	var url string
	if dialect == models.Postgres {
		url = dbtest.PostgresURL(t)
	} else {
		url = dbtest.SQLitePath(t)
	}
	out := make([]*gorm.DB, n)
	for i := range out {
		out[i] = dbtest.Open(t, url)
	}
	return out
}

// eachDB runs fn once per database, the two side by side.
func eachDB(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, d := range []string{models.SQLite, models.Postgres} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

// skipLong skips a test that takes a minute by nature under -short, as the
// browser tests are, but never under CI.
func skipLong(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("takes about a minute (a provider's rolling window); skipped under -short, go test ./... runs it")
	}
}

// logBuffer is a logger whose lines a test can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// newLimiters makes one limiter per database handle, as each instance
// would.
func newLimiters(dbs []*gorm.DB, cfg config.RateLimit, opts Options) []*Limiter {
	out := make([]*Limiter, len(dbs))
	for i, db := range dbs {
		out[i] = New(db, "crm", cfg, opts)
	}
	return out
}

var httpClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 200}}

// call sends one request through l, the way the connector does.
func call(ctx context.Context, l *Limiter, url string) (int, error) {
	done, err := l.Wait(ctx)
	if err != nil {
		return 0, err
	}
	res, err := httpClient.Get(url)
	if err != nil {
		done(nil)
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	done(res)
	return res.StatusCode, nil
}

// backlog sends jobs requests to url through workers goroutines per
// limiter, a refused request sent again until it goes through, and
// returns how many answers were 429s.
func backlog(t *testing.T, limiters []*Limiter, workers, jobs int, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	queue := make(chan int, jobs)
	for i := range jobs {
		queue <- i
	}
	close(queue)
	var mu sync.Mutex
	refused := 0
	var wg sync.WaitGroup
	for _, l := range limiters {
		for range workers {
			wg.Go(func() {
				for range queue {
					for {
						status, err := call(ctx, l, url)
						if err != nil {
							t.Error(err)
							return
						}
						if status != http.StatusTooManyRequests {
							break
						}
						mu.Lock()
						refused++
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "the backlog did not drain in time")
	return refused
}
