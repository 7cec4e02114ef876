package ratelimit

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
)

// An answer saying nothing remains in the provider's window holds every
// instance until the window frees: the reset it names, or, for HubSpot's
// rolling window, the window's length.
func TestAnExhaustedWindowHoldsEveryInstance(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		for _, headers := range [][]string{
			{"X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1"},
			{"RateLimit", `"default";r=0;t=1`},
			{"X-HubSpot-RateLimit-Max", "1000", "X-HubSpot-RateLimit-Interval-Milliseconds", "1000", "X-HubSpot-RateLimit-Remaining", "0"},
		} {
			p, url := newWindowProvider(t, 1_000_000, time.Second)
			p.headers = false
			dbs := instances(t, dialect, 2)
			opts := Options{Refresh: 50 * time.Millisecond}
			a, b := New(dbs[0], "crm", config.RateLimit{}, opts), New(dbs[1], "crm", config.RateLimit{}, opts)
			for _, l := range []*Limiter{a, b} {
				_, err := call(t.Context(), l, url)
				require.NoError(t, err)
			}
			p.answerOnce(func(w http.ResponseWriter) bool {
				for i := 0; i < len(headers); i += 2 {
					w.Header().Set(headers[i], headers[i+1])
				}
				w.WriteHeader(http.StatusOK)
				return true
			})
			_, err := call(t.Context(), a, url)
			require.NoError(t, err)
			exhaustedAt := time.Now()
			time.Sleep(opts.Refresh + 20*time.Millisecond)
			_, err = call(t.Context(), b, url)
			require.NoError(t, err)
			held := time.Since(exhaustedAt)
			require.GreaterOrEqual(t, held, time.Second-30*time.Millisecond, "%v: B went %v after A heard nothing remained", headers, held)
			require.Less(t, held, 2*time.Second, headers)
		}
	})
}

// A limit learned from the headers tightens the configured one and never
// loosens it.
func TestALearnedLimitOnlyTightens(t *testing.T) {
	eachDB(t, func(t *testing.T, dialect string) {
		for _, tc := range []struct {
			cfg         config.RateLimit
			rate, burst float64
		}{
			{config.RateLimit{PerSecond: 100, Burst: 100}, 4.3, 4},
			{config.RateLimit{PerSecond: 1, Burst: 1}, 1, 1},
			{config.RateLimit{PerSecond: 2, Burst: 20}, 2, 4},
		} {
			_, url := newWindowProvider(t, 50, 10*time.Second)
			db := instances(t, dialect, 1)[0]
			_, err := call(t.Context(), New(db, "crm", tc.cfg, Options{}), url)
			require.NoError(t, err)
			st, err := models.ReadRateLimit(db, "crm", time.Time{})
			require.NoError(t, err)
			require.Equal(t, [2]float64{tc.rate, tc.burst}, [2]float64{math.Round(st.Rate*100) / 100, st.Burst}, "configured %+v", tc.cfg)
			require.Equal(t, int64(50), st.LearnedLimit)
		}
	})
}
