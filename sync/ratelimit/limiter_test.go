package ratelimit

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
)

// A configured rate holds for two instances together, measured where it
// counts, at the provider: the turns allow burst + per_second in any
// second, both ends included (25), and the backlog takes as long as the
// rate says. Requests reach the provider up to some milliseconds after
// their turn (a timer fired late, a goroutine not yet scheduled: the race
// detector and the other packages' tests share two cores), so the count
// allows for a turn 100 ms late: at most the turns of 1.1 s, 27.
func TestConfiguredRateIsNeverExceeded(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		const perSecond, burst, jobs, late = 20, 5, 120, 100 * time.Millisecond
		p, url := newWindowProvider(t, 1_000_000, time.Second)
		p.headers = false
		limiters := newLimiters(instances(t, dialect, 2), config.RateLimit{PerSecond: perSecond, Burst: burst}, Options{})
		require.Zero(t, backlog(t, limiters, 16, jobs, url))
		most, bound := p.busiest(time.Second), burst+int(perSecond*(time.Second+late).Seconds())
		require.LessOrEqual(t, most, bound, "requests in one second")
		min := time.Duration(float64(jobs-burst) / perSecond * float64(time.Second))
		require.GreaterOrEqual(t, p.span(), min-late)
		require.Less(t, p.span(), min*3/2, "and not much slower than the rate")
		t.Logf("%d requests from 2 instances in %v (the rate's %v), busiest second %d (turns: 25, with lateness: %d)", jobs, p.span().Round(time.Millisecond), min, most, bound)
	})
}

// rate_limit.concurrent bounds the requests in flight on an instance, and
// it is what bounds them: without it, 32 senders have many more in flight.
func TestConcurrentBoundHolds(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		for _, tc := range []struct{ concurrent, atMost, atLeast int }{{3, 3, 3}, {0, 32, 10}} {
			p, url := newWindowProvider(t, 1_000_000, time.Second)
			p.headers, p.work = false, 20*time.Millisecond
			l := newLimiters(instances(t, dialect, 1), config.RateLimit{Concurrent: tc.concurrent}, Options{})
			require.Zero(t, backlog(t, l, 32, 200, url))
			c := p.counts()
			require.LessOrEqual(t, c.maxInFlight, tc.atMost, "concurrent: %d", tc.concurrent)
			require.GreaterOrEqual(t, c.maxInFlight, tc.atLeast, "concurrent: %d", tc.concurrent)
		}
	})
}

// Until the limit is known, one request at a time is in flight: the first
// answer without rate headers opens the way; a 429 does not, since it says
// there is a limit without saying which.
func TestSlowStartSendsOneUntilAnAnswer(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		for _, first429 := range []bool{false, true} {
			p, url := newWindowProvider(t, 1_000_000, time.Second)
			p.headers, p.work = false, 100*time.Millisecond
			if first429 {
				p.answerOnce(func(w http.ResponseWriter) bool { w.WriteHeader(http.StatusTooManyRequests); return true })
			}
			l := newLimiters(instances(t, dialect, 1), config.RateLimit{}, Options{})
			refused := backlog(t, l, 32, 96, url)
			c := p.counts()
			require.Equal(t, 1, c.beforeAnswer, "requests before the first answer")
			require.Equal(t, 1, c.maxBeforeOK, "in flight before the first request went through (first a 429: %v)", first429)
			require.GreaterOrEqual(t, c.maxInFlight, 16, "and then many at once")
			require.Equal(t, map[bool]int{false: 0, true: 1}[first429], refused)
		}
	})
}

// countStatements counts the statements run on db from now on.
func countStatements(t *testing.T, db *gorm.DB) func() int {
	var mu sync.Mutex
	n := 0
	count := func(*gorm.DB) { mu.Lock(); n++; mu.Unlock() }
	cb := db.Callback()
	for i, p := range []interface {
		Register(string, func(*gorm.DB)) error
	}{cb.Create().After("*"), cb.Query().After("*"), cb.Update().After("*"), cb.Delete().After("*"), cb.Row().After("*"), cb.Raw().After("*")} {
		require.NoError(t, p.Register("test:count"+string(rune('a'+i)), count))
	}
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// Without a configured limit and with answers that carry no rate headers,
// a request costs no database statement after the first; with a rate
// configured, each takes one.
func TestTheFastPathCostsNoRoundTrip(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		ok := answer(http.StatusOK)
		for _, tc := range []struct {
			cfg  config.RateLimit
			want int
		}{{config.RateLimit{}, 0}, {config.RateLimit{PerSecond: 10000}, 1000}} {
			db := instances(t, dialect, 1)[0]
			statements := countStatements(t, db)
			l := New(db, "crm", tc.cfg, Options{Refresh: time.Hour})
			done, err := l.Wait(t.Context())
			require.NoError(t, err)
			done(ok)
			first := statements()
			require.Positive(t, first, "the first request makes the row")
			for range 1000 {
				done, err := l.Wait(t.Context())
				require.NoError(t, err)
				done(ok)
			}
			require.Equal(t, tc.want, statements()-first, "statements for 1000 requests, per_second %v", tc.cfg.PerSecond)
		}
	})
}

// A database that fails does not stall the sending: the instance paces
// alone at the rate it last knew, says so once, and shares the row again
// when the database answers.
func TestDatabaseFailurePacesLocally(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		p, url := newWindowProvider(t, 1_000_000, time.Second)
		p.headers = false
		db := instances(t, dialect, 1)[0]
		log, logs := newLogger()
		l := New(db, "crm", config.RateLimit{PerSecond: 20, Burst: 2}, Options{Logger: log, RetryDB: 300 * time.Millisecond})
		_, err := call(t.Context(), l, url)
		require.NoError(t, err)
		require.NoError(t, db.Exec("ALTER TABLE rate_limits RENAME TO rate_limits_away").Error)

		start := time.Now()
		for range 22 {
			status, err := call(t.Context(), l, url)
			require.NoError(t, err, "sending goes on")
			require.Equal(t, http.StatusOK, status)
		}
		took := time.Since(start)
		require.GreaterOrEqual(t, took, 950*time.Millisecond, "22 requests at 20/s with a burst of 2, alone")
		require.Equal(t, 1, strings.Count(logs.String(), "rate limit kept by this instance alone"), logs.String())

		require.NoError(t, db.Exec("ALTER TABLE rate_limits_away RENAME TO rate_limits").Error)
		time.Sleep(300 * time.Millisecond)
		_, err = call(t.Context(), l, url)
		require.NoError(t, err)
		require.Contains(t, logs.String(), "rate limit shared with the other instances again")
		require.Equal(t, 1, strings.Count(logs.String(), "rate limit kept by this instance alone"))
	})
}

// Wait ends with its context: a turn past the deadline fails at once
// rather than sleeping into it, and a request queued for a slot leaves the
// queue without taking one.
func TestWaitEndsWithItsContext(t *testing.T) {
	db := instances(t, models.SQLite, 1)[0]
	l := New(db, "crm", config.RateLimit{PerSecond: 1, Burst: 1, Concurrent: 1}, Options{})
	done, err := l.Wait(t.Context())
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = l.Wait(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the only slot is taken")
	require.Less(t, time.Since(start), time.Second)

	done(nil)
	ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = l.Wait(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the next turn is a second away")
	require.ErrorContains(t, err, "after this call's deadline")
	require.Less(t, time.Since(start), 100*time.Millisecond, "said at once, not slept into")

	time.Sleep(2 * time.Second) // the turn given up is spent
	done, err = l.Wait(t.Context())
	require.NoError(t, err, "the slot was given back")
	done(nil)
	done(nil) // a second call changes nothing
	var nothing *Limiter
	done, err = nothing.Wait(t.Context())
	require.NoError(t, err)
	done(nil)
}

// The very first requests of a new limiter keep to the rate too: while the
// first of them makes the service's row, the others must not take the row
// for one without a rate (they did, once: a burst of the whole backlog).
func TestTheFirstRequestsKeepToTheRate(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		for range 5 {
			l := New(instances(t, dialect, 1)[0], "crm", config.RateLimit{PerSecond: 1, Burst: 1}, Options{})
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			var mu sync.Mutex
			went := 0
			var wg sync.WaitGroup
			for range 32 {
				wg.Go(func() {
					if done, err := l.Wait(ctx); err == nil {
						mu.Lock()
						went++
						mu.Unlock()
						done(nil)
					}
				})
			}
			wg.Wait()
			cancel()
			require.Equal(t, 1, went, "requests let through in the first half second at 1/s with a burst of 1")
		}
	})
}
