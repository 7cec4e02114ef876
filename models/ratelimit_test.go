package models_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

var rateEpoch = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// take takes one turn at a moment after rateEpoch and returns its wait.
func take(t *testing.T, db *gorm.DB, after time.Duration) time.Duration {
	t.Helper()
	s, err := models.TakeRateSlots(db, "crm", 1, rateEpoch.Add(after))
	require.NoError(t, err)
	require.WithinDuration(t, rateEpoch.Add(after), s.Now, time.Microsecond, "the statement's clock is the one given")
	require.Len(t, s.Waits, 1)
	return s.Waits[0]
}

// A bucket of 2 per second with a burst of 3: three turns at once, then one
// every half second, reserved ahead; a quiet spell fills it again, never
// beyond the burst.
func TestRateSlotsFollowTheBucket(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, models.ConfigureRateLimit(db, "crm", 2, 3))
		var waits []time.Duration
		for range 6 {
			waits = append(waits, take(t, db, 0))
		}
		ms := time.Millisecond
		require.Equal(t, []time.Duration{0, 0, 0, 500 * ms, 1000 * ms, 1500 * ms}, roundMS(waits))
		require.Equal(t, 500*ms, take(t, db, 1500*ms).Round(ms), "the next after the reserved ones")
		for range 3 {
			require.Zero(t, take(t, db, time.Hour), "a full bucket after an hour: the burst")
		}
		require.Equal(t, 500*ms, take(t, db, time.Hour).Round(ms), "and no more than the burst")
	})
}

func roundMS(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// Turns taken together are the turns taken one by one.
func TestTurnsTakenTogetherAreTheTurnsTakenAlone(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, models.ConfigureRateLimit(db, "crm", 2, 3))
		s, err := models.TakeRateSlots(db, "crm", 5, rateEpoch)
		require.NoError(t, err)
		ms := time.Millisecond
		require.Equal(t, []time.Duration{0, 0, 0, 500 * ms, 1000 * ms}, roundMS(s.Waits))
		require.Equal(t, 1500*ms, take(t, db, 0).Round(ms), "and the next one after them")
	})
}

// Without a rate, a turn costs nothing and waits only for a block; a block
// holds every instance until it ends, and a shorter one never shortens it.
func TestRateBlocksHoldUntilTheyEnd(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, models.ConfigureRateLimit(db, "crm", 0, 0))
		require.Zero(t, take(t, db, 0))
		st, err := models.BlockRateLimit(db, "crm", 30*time.Second, "429 Retry-After: 30", rateEpoch)
		require.NoError(t, err)
		require.Equal(t, rateEpoch.Add(30*time.Second), st.BlockedUntil)
		st, err = models.BlockRateLimit(db, "crm", 5*time.Second, "429 Retry-After: 5", rateEpoch.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, rateEpoch.Add(30*time.Second), st.BlockedUntil, "the longer block holds")
		require.Equal(t, 20*time.Second, take(t, db, 10*time.Second).Round(time.Millisecond))
		require.Zero(t, take(t, db, 31*time.Second))
		var row models.RateLimit
		require.NoError(t, db.Where("service = ?", "crm").Take(&row).Error)
		require.Equal(t, "429 Retry-After: 30", row.BlockedReason)

		require.NoError(t, models.ConfigureRateLimit(db, "crm", 1, 1))
		_, err = models.BlockRateLimit(db, "crm", 10*time.Second, "no requests remaining", rateEpoch.Add(time.Minute))
		require.NoError(t, err)
		ms := time.Millisecond
		require.Equal(t, []time.Duration{10000 * ms, 11000 * ms}, roundMS([]time.Duration{take(t, db, time.Minute), take(t, db, time.Minute)}),
			"after a block the turns are spaced at the rate, not let through at once")

		_, err = models.TakeRateSlots(db, "nobody", 1, time.Time{})
		require.ErrorIs(t, err, models.ErrNotFound)
	})
}

// A learned limit only ever tightens the configured one, each of rate and
// burst; the configuration changing keeps what was learned; learning the
// same limit again changes nothing.
func TestLearnedLimitsOnlyTighten(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, models.ConfigureRateLimit(db, "crm", 10, 10))
		learned := models.LearnedRate{Limit: 50, Window: 10 * time.Second, Rate: 4.3, Burst: 4}
		st, changed, err := models.LearnRateLimit(db, "crm", learned, rateEpoch)
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, [2]float64{4.3, 4}, [2]float64{st.Rate, st.Burst})
		require.Equal(t, int64(50), st.LearnedLimit)
		require.Equal(t, 10*time.Second, st.LearnedWindow)

		_, changed, err = models.LearnRateLimit(db, "crm", learned, rateEpoch)
		require.NoError(t, err)
		require.False(t, changed, "the same limit again")

		require.NoError(t, models.ConfigureRateLimit(db, "crm", 2, 20))
		st, err = models.ReadRateLimit(db, "crm", rateEpoch)
		require.NoError(t, err)
		require.Equal(t, [2]float64{2, 4}, [2]float64{st.Rate, st.Burst}, "the tighter of each")
		require.NoError(t, models.ConfigureRateLimit(db, "crm", 0, 0))
		st, err = models.ReadRateLimit(db, "crm", rateEpoch)
		require.NoError(t, err)
		require.Equal(t, [2]float64{4.3, 4}, [2]float64{st.Rate, st.Burst}, "no configuration: the learned limit")
		require.Equal(t, int64(50), st.LearnedLimit)

		_, _, err = models.LearnRateLimit(db, "nobody", learned, rateEpoch)
		require.ErrorIs(t, err, models.ErrNotFound)
	})
}

// A bucket re-seeded by learning owes what the provider has counted in its
// window already (Used) and the turns reserved at the old rate.
func TestLearningSeedsTheBucketWithWhatIsUsed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, models.ConfigureRateLimit(db, "crm", 0, 0))
		_, _, err := models.LearnRateLimit(db, "crm", models.LearnedRate{Limit: 50, Window: 10 * time.Second, Rate: 4, Burst: 4, Used: 3}, rateEpoch)
		require.NoError(t, err)
		ms := time.Millisecond
		require.Equal(t, []time.Duration{0, 250 * ms, 500 * ms}, roundMS([]time.Duration{take(t, db, 0), take(t, db, 0), take(t, db, 0)}),
			"a burst of 4 less the 3 used: one turn now")

		require.NoError(t, models.ConfigureRateLimit(db, "pay", 10, 1))
		for range 10 { // reserves a second ahead at 10/s
			_, err := models.TakeRateSlots(db, "pay", 1, rateEpoch)
			require.NoError(t, err)
		}
		_, _, err = models.LearnRateLimit(db, "pay", models.LearnedRate{Limit: 10, Window: 10 * time.Second, Rate: 1, Burst: 1, Used: 2}, rateEpoch)
		require.NoError(t, err)
		s, err := models.TakeRateSlots(db, "pay", 1, rateEpoch)
		require.NoError(t, err)
		require.Equal(t, 12*time.Second, s.Waits[0].Round(ms), "2 used and ~10 reserved, at 1/s")
	})
}

// Dozens of takers on separate connections never share a turn: the turns
// handed out, one, two or three per statement, are spaced by the rate, as
// one UPDATE … RETURNING guarantees and a read followed by a write would
// not.
func TestConcurrentTakersGetDistinctTurns(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		const rate, takers, each = 500.0, 32, 8
		require.NoError(t, models.ConfigureRateLimit(db, "crm", rate, 1))
		var mu sync.Mutex
		var turns []time.Time
		var wg sync.WaitGroup
		for i := range takers {
			wg.Go(func() {
				for range each {
					s, err := models.TakeRateSlots(db, "crm", 1+i%3, time.Time{})
					if !assertNoErr(t, err) {
						return
					}
					mu.Lock()
					for _, w := range s.Waits {
						turns = append(turns, s.Now.Add(w))
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, turns, (takers/3*(1+2+3)+(1+2))*each, "one turn per request, some taken three at a time")
		slices.SortFunc(turns, func(a, b time.Time) int { return a.Compare(b) })
		gap := time.Duration(float64(time.Second) / rate)
		for i := 1; i < len(turns); i++ {
			require.GreaterOrEqual(t, turns[i].Sub(turns[i-1]), gap-time.Microsecond, "turns %d and %d", i-1, i)
		}
	})
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}
