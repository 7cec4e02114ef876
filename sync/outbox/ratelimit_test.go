package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/fakes/hubspot"
	"github.com/syncdesk/syncdesk/sync/ratelimit"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// refusals times the provider's 429 answers.
type refusals struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

func (r *refusals) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, req)
		if rec.status == http.StatusTooManyRequests {
			r.mu.Lock()
			r.at = append(r.at, time.Since(r.start))
			r.mu.Unlock()
		}
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }

// A backlog of 300 contacts meets HubSpot allowing 50 requests per rolling
// 10 s. The preset's own pace (9 a second) is too fast for it: the limit
// is learned from HubSpot's headers at the first answer and then held, by
// one instance alone and by three sharing a database, so that no request
// after that is refused.
// Each run takes a minute by nature (300 requests at 50 per 10 s); the two
// run side by side, and under -short only when CI says so (sync/ratelimit
// holds the same bound for its limiter alone, on both databases).
func TestTheProvidersRateLimitIsLearnedAndHeldByEveryInstance(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("a minute of real time; runs without -short and under CI=true")
	}
	run := func(t *testing.T, dbs []*gorm.DB) {
		fake := hubspot.New(hubspot.Options{Limit: hubspot.Limit{Max: 50, Window: 10 * time.Second},
			Properties: map[string][]hubspot.Property{"contacts": {{Name: "syncdesk_key", Unique: true}}}})
		seen := &refusals{start: time.Now()}
		srv := httptest.NewServer(seen.wrap(fake))
		t.Cleanup(srv.Close)
		cfg := presetService(t, "hubspot", hubspotYAML, srv.URL)
		log := slog.New(slog.DiscardHandler)

		var engines []*Engine
		for i, db := range dbs {
			conn := connector.NewHTTP("hubspot", cfg, redact.New(nil), nil).
				WithGate(ratelimit.New(db, "hubspot", cfg.RateLimit, ratelimit.Options{Logger: log}))
			eng := New(db, []Service{{Name: "hubspot", Config: cfg, Conn: conn}}, clock.Real{}, log,
				Options{Concurrency: 16, WorkerID: fmt.Sprintf("instance-%d", i), Poll: 20 * time.Millisecond})
			eng.SetRand(rand.New(rand.NewPCG(uint64(i), 3)))
			engines = append(engines, eng)
		}
		for i := 1; i <= 300; i++ {
			_, err := engines[0].Upsert(context.Background(), "contact", fmt.Sprint(i), []byte(contact(i)))
			require.NoError(t, err)
		}
		seen.start = time.Now()
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, eng := range engines {
			wg.Add(1)
			go func() { defer wg.Done(); require.NoError(t, eng.Run(ctx, 5*time.Second)) }()
		}
		require.Eventually(t, func() bool {
			var open int64
			dbs[0].Model(&models.Link{}).Where("status <> ?", models.StatusSuccess).Count(&open)
			return open == 0
		}, 150*time.Second, 200*time.Millisecond, "every link synced")
		stop()
		wg.Wait()

		took := time.Since(seen.start)
		seen.mu.Lock()
		defer seen.mu.Unlock()
		t.Logf("%d instance(s): 300 contacts in %s, 429 answers at %v", len(dbs), took.Round(time.Second), seen.at)
		require.LessOrEqual(t, len(seen.at), 3, "a handful at the start at most")
		for _, at := range seen.at {
			require.Less(t, at, 2*time.Second, "no 429 once the limit is learned")
		}
		require.Equal(t, 300, len(fake.Objects("contacts")))
	}
	t.Run("one instance on SQLite", func(t *testing.T) {
		t.Parallel()
		run(t, []*gorm.DB{dbtest.SQLite(t)})
	})
	t.Run("three instances on one Postgres", func(t *testing.T) {
		t.Parallel()
		url := dbtest.PostgresURL(t)
		run(t, []*gorm.DB{dbtest.Open(t, url), dbtest.Open(t, url), dbtest.Open(t, url)})
	})
}
