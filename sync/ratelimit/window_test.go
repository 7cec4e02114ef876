package ratelimit

import (
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
)

// The acceptance test of issue 11: a provider allowing 50 requests per
// rolling 10 seconds, a backlog of 300 and no limit configured. Before the
// first answer each instance has one request in flight (the slow start),
// which no window can refuse; the first answer teaches the limit to every
// instance through the shared row, and from then on the bucket keeps
// under 50 in every window. So the bound claimed is exact: not one 429,
// on one instance and on three sharing a database.
func TestBacklogAgainstARollingWindowGetsNo429(t *testing.T) {
	skipLong(t)
	for _, tc := range []struct {
		dialect   string
		instances int
	}{{models.SQLite, 1}, {models.Postgres, 3}} { // two: go test runs two at once on two cores
		t.Run(fmt.Sprintf("%s/%d instances", tc.dialect, tc.instances), func(t *testing.T) {
			t.Parallel()
			const limit, window, jobs, workers = 50, 10 * time.Second, 300, 32
			p, url := newWindowProvider(t, limit, window)
			log, logs := newLogger()
			limiters := newLimiters(instances(t, tc.dialect, tc.instances), config.RateLimit{}, Options{Logger: log})
			start := time.Now()
			refused := backlog(t, limiters, workers, jobs, url)
			took := time.Since(start)

			c := p.counts()
			require.Zero(t, refused, "answers of 429")
			require.Zero(t, c.refused)
			require.Equal(t, jobs, c.accepted)
			require.LessOrEqual(t, c.beforeAnswer, tc.instances, "requests before the first answer: one per instance")
			busiest := p.busiest(window)
			require.LessOrEqual(t, busiest, limit)
			require.Contains(t, logs.String(), "rate limit learned from the provider's answers")
			// The bucket allows 47 per window (4 at once, then 4.3/s): the
			// backlog takes about (300-4)/4.3 s. Slower than 1.5 times that
			// would mean it paces far below what it learned.
			r, b := windowBucket(limit, window)
			require.Equal(t, [2]float64{4.3, 4}, [2]float64{math.Round(r*100) / 100, b})
			ideal := time.Duration((jobs - b) / r * float64(time.Second))
			require.Less(t, took, ideal*3/2, "took %v, the learned bucket allows it in about %v", took, ideal)
			t.Logf("%d requests from %d goroutines on %d instance(s) in %v (bucket's pace: %v): 0 refused, busiest %v window %d of %d, %d before the first answer",
				jobs, workers*tc.instances, tc.instances, took.Round(time.Millisecond), ideal.Round(time.Millisecond), window, busiest, limit, c.beforeAnswer)
		})
	}
}

// The bucket made of a window never lets more than the window's limit
// through in any window of its length, and uses most of it: checked by
// the bound b + r·w for every limit up to 2000, and by playing a greedy
// sender against a rolling window counter.
func TestWindowBucketStaysUnderTheLimit(t *testing.T) {
	for _, w := range []time.Duration{time.Second, 10 * time.Second, time.Minute} {
		for n := int64(1); n <= 2000; n++ {
			r, b := windowBucket(n, w)
			most := b + math.Floor(r*w.Seconds()+1e-9)
			require.LessOrEqual(t, most, float64(n), "limit %d per %v: rate %v burst %v", n, w, r, b)
			require.GreaterOrEqual(t, b, 1.0)
			if n >= 40 {
				require.GreaterOrEqual(t, most, 0.9*float64(n), "limit %d per %v: uses most of the window", n, w)
			}
		}
	}
	for _, n := range []int64{1, 3, 10, 50, 150, 1000} {
		r, b := windowBucket(n, 10*time.Second)
		require.Zero(t, refusedByWindow(n, 10*time.Second, r, b, 2000), "limit %d", n)
	}
}

// refusedByWindow sends count requests as early as the bucket allows and
// counts those a rolling window of n per w would refuse.
func refusedByWindow(n int64, w time.Duration, rate, burst float64, count int) int {
	var sent []float64
	tat, refused := 0.0, 0
	for range count {
		tat = max(tat, 0) + 1/rate
		at := max(0, tat-burst/rate) // GCRA's turn, as models.TakeRateSlot computes it
		inWindow := 0
		for i := len(sent) - 1; i >= 0 && sent[i] > at-w.Seconds(); i-- {
			inWindow++
		}
		if int64(inWindow) >= n {
			refused++
			continue
		}
		sent = append(sent, at)
	}
	return refused
}

// Retry-After answered to one instance holds every other one: B, which
// never saw the 429, waits until the block A was given ends. With a rate
// configured B reads the row at every turn; without one, at its next
// refresh.
func TestRetryAfterFromOneInstanceHoldsTheOthers(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		for _, cfg := range []config.RateLimit{{PerSecond: 50}, {}} {
			p, url := newWindowProvider(t, 1000, time.Second)
			p.headers = false
			dbs := instances(t, dialect, 2)
			opts := Options{Refresh: 100 * time.Millisecond}
			a, b := New(dbs[0], "crm", cfg, opts), New(dbs[1], "crm", cfg, opts)
			for _, l := range []*Limiter{a, b} {
				status, err := call(t.Context(), l, url)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status)
			}
			p.answerOnce(func(w http.ResponseWriter) bool {
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			})
			status, err := call(t.Context(), a, url)
			require.NoError(t, err)
			require.Equal(t, http.StatusTooManyRequests, status)
			blockedAt := time.Now()
			time.Sleep(opts.Refresh + 20*time.Millisecond)
			status, err = call(t.Context(), b, url)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status)
			held := time.Since(blockedAt)
			require.GreaterOrEqual(t, held, 2*time.Second-30*time.Millisecond, "per_second %v: B went %v after A's Retry-After: 2", cfg.PerSecond, held)
			require.Less(t, held, 3*time.Second, "and went once the block ended")
		}
	})
}

// A hold asked for an answer the service's configuration reads (a
// Salesforce org's spent allowance: 403 with no Retry-After) holds every
// instance, for no longer than MaxBlock, and says why on the row the
// Services page shows.
func TestAHoldForAProvidersAnswerHoldsEveryInstance(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		_, url := newWindowProvider(t, 1000, time.Second)
		dbs := instances(t, dialect, 2)
		opts := Options{Refresh: 100 * time.Millisecond, MaxBlock: 2 * time.Second}
		a, b := New(dbs[0], "crm", config.RateLimit{}, opts), New(dbs[1], "crm", config.RateLimit{}, opts)
		for _, l := range []*Limiter{a, b} {
			status, err := call(t.Context(), l, url)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status)
		}
		heldAt := time.Now() // the hold runs from its write, after this
		a.Hold(time.Hour, "403 Forbidden: the org's API requests for the last 24 hours are used up")
		rows, err := models.RateLimits(dbs[1])
		require.NoError(t, err)
		require.Len(t, rows, 1)
		until, why := rows[0].Blocked()
		require.Equal(t, "403 Forbidden: the org's API requests for the last 24 hours are used up", why)
		require.WithinDuration(t, heldAt.Add(2*time.Second), until, time.Second, "an hour asked, MaxBlock held")
		require.InDelta(t, float64(2*time.Second), float64(a.HeldFor()), float64(time.Second), "A says the service is held (the engine claims none of its links)")

		time.Sleep(opts.Refresh + 20*time.Millisecond)
		status, err := call(t.Context(), b, url)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		held := time.Since(heldAt)
		require.GreaterOrEqual(t, held, 2*time.Second-30*time.Millisecond, "B went %v after A's hold", held)
		require.Less(t, held, 3*time.Second, "and went once MaxBlock ended")
		require.Zero(t, a.HeldFor(), "held no more")
	})
}
