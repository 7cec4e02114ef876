package models_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

var breakerLimits = models.BreakerLimits{Consecutive: 3, Ratio: 0.5, MinCalls: 10, ProbeEvery: 30 * time.Second}

func failures(n int) models.BreakerTally {
	return models.BreakerTally{Calls: n, Failures: n, Trailing: n, Answer: "answered 503", Last: "answered 503"}
}

func reason(c models.BreakerCounts) string {
	return fmt.Sprintf("%d in a row %s", c.Consecutive, c.RunAnswer)
}

// Instances racing to open one breaker: one opens it, pauses the service
// and audits it; a probe interval gives one probe to one of them.
func TestBreakerOpensOnceAndProbesOncePerInterval(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		at := rateEpoch
		_, _, err := models.RecordBreakerCalls(db, "crm", failures(3), 5*time.Minute, at)
		require.NoError(t, err)
		var opened, taken atomic.Int32
		race := func(f func() error) {
			var wg sync.WaitGroup
			errs := make(chan error, 10)
			for range 10 {
				wg.Go(func() { errs <- f() })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		}
		race(func() error {
			ok, _, err := models.TripBreaker(db, "crm", breakerLimits, reason, at, at)
			if ok {
				opened.Add(1)
			}
			return err
		})
		require.EqualValues(t, 1, opened.Load())
		var audits int64
		require.NoError(t, db.Model(&models.AuditEntry{}).Where("actor = ? AND action = ?", models.AutomaticPauser, "service.pause").Count(&audits).Error)
		require.EqualValues(t, 1, audits)
		ps, err := models.ListPauses(db)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.True(t, ps[0].Automatic())
		require.Equal(t, "3 in a row answered 503", ps[0].Reason)

		_, open, err := models.RecordBreakerCalls(db, "crm", failures(1), 5*time.Minute, at)
		require.NoError(t, err)
		require.True(t, open, "an open breaker counts nothing")

		for i, after := range []time.Duration{0, 29 * time.Second, 30 * time.Second, 45 * time.Second, 60 * time.Second} {
			taken.Store(0)
			race(func() error {
				ok, _, err := models.TakeProbe(db, "crm", breakerLimits.ProbeEvery, at.Add(after))
				if ok {
					taken.Add(1)
				}
				return err
			})
			want := map[bool]int32{true: 1, false: 0}[after == 30*time.Second || after == 60*time.Second]
			require.Equal(t, want, taken.Load(), "probe %d at +%v", i, after)
		}
		_, wait, err := models.TakeProbe(db, "crm", breakerLimits.ProbeEvery, at.Add(70*time.Second))
		require.NoError(t, err)
		require.InDelta(t, 20*time.Second, wait, float64(time.Millisecond), "a probe not taken says when the next may be")
	})
}

// A probe answered while a person has made the pause theirs lifts nothing:
// the breaker stays open until that person resumes.
func TestAProbeNeverLiftsAPersonsPause(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		at := rateEpoch
		_, _, err := models.RecordBreakerCalls(db, "crm", failures(3), 5*time.Minute, at)
		require.NoError(t, err)
		ok, _, err := models.TripBreaker(db, "crm", breakerLimits, reason, at, at)
		require.NoError(t, err)
		require.True(t, ok)
		_, created, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: "ana@example.com", PausedAt: at, Reason: "keep"})
		require.NoError(t, err)
		require.True(t, created, "a person takes an automatic pause over")

		taken, _, err := models.TakeProbe(db, "crm", breakerLimits.ProbeEvery, at.Add(time.Hour))
		require.NoError(t, err)
		require.False(t, taken, "no probe of a service a person keeps paused")
		closed, err := models.CloseBreaker(db, "crm", "probe answered", at)
		require.NoError(t, err)
		require.False(t, closed)
		paused, err := models.IsPaused(db, "crm")
		require.NoError(t, err)
		require.True(t, paused)

		was, err := models.Resume(db, "crm")
		require.NoError(t, err)
		require.True(t, was)
		b, err := models.ReadBreaker(db, "crm")
		require.NoError(t, err)
		require.Equal(t, "closed", b.State)
		require.Zero(t, b.Consecutive)
	})
}

// A person who takes the breaker's pause over is recorded with when: the
// pause keeps the breaker's time and reason, and a later pause by someone
// else changes none of it. A pause by hand from the start was kept by no one.
func TestTakingOverAnAutomaticPauseRecordsWhoAndWhen(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		at := rateEpoch
		_, _, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: models.AutomaticPauser, PausedAt: at, Reason: "answered 503"})
		require.NoError(t, err)
		_, _, err = models.Pause(db, models.ServicePause{Service: "erp", PausedBy: "olga@example.com", PausedAt: at, Reason: "maintenance"})
		require.NoError(t, err)
		kept := at.Add(62 * time.Minute)
		_, created, err := models.Pause(db, models.ServicePause{Service: "crm", PausedBy: "ana@example.com", PausedAt: kept, Reason: "mine"})
		require.NoError(t, err)
		require.True(t, created)
		_, created, err = models.Pause(db, models.ServicePause{Service: "crm", PausedBy: "olga@example.com", PausedAt: kept.Add(time.Minute)})
		require.NoError(t, err)
		require.False(t, created, "ana's now")

		pauses, err := models.ListPauses(db)
		require.NoError(t, err)
		require.Len(t, pauses, 2)
		crm, erp := pauses[0], pauses[1]
		require.Equal(t, "ana@example.com", crm.PausedBy)
		require.True(t, crm.Kept())
		require.Equal(t, kept, crm.KeptAt.UTC())
		require.Equal(t, at, crm.PausedAt.UTC())
		require.Equal(t, "answered 503", crm.Reason, "the breaker's reason stays")
		require.False(t, erp.Kept(), "paused by hand from the start")
	})
}

// The run and the window: an answered call resets the run, a mixed run
// says so, and the failure share counts in its window only.
func TestBreakerCounts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		at := rateEpoch
		c, open, err := models.RecordBreakerCalls(db, "crm", failures(2), time.Minute, at)
		require.NoError(t, err)
		require.False(t, open)
		require.Equal(t, models.BreakerCounts{Consecutive: 2, RunAnswer: "answered 503", LastAnswer: "answered 503", WindowCalls: 2, WindowFailures: 2}, c)

		c, _, err = models.RecordBreakerCalls(db, "crm", models.BreakerTally{Calls: 3, Failures: 1, Reset: true, Trailing: 1,
			Answer: "got no answer in time", Last: "got no answer in time"}, time.Minute, at.Add(10*time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, c.Consecutive, "an answered call started the run again")
		require.Equal(t, "got no answer in time", c.RunAnswer)
		require.Equal(t, 5, c.WindowCalls)
		require.Equal(t, 3, c.WindowFailures)

		c, _, err = models.RecordBreakerCalls(db, "crm", failures(1), time.Minute, at.Add(20*time.Second))
		require.NoError(t, err)
		require.Equal(t, 2, c.Consecutive)
		require.Equal(t, "*", c.RunAnswer, "failures that answered differently")

		c, _, err = models.RecordBreakerCalls(db, "crm", failures(1), time.Minute, at.Add(61*time.Second))
		require.NoError(t, err)
		require.Equal(t, 3, c.Consecutive, "the run outlives the window")
		require.Equal(t, 1, c.WindowCalls, "a new window counts afresh")
		require.Equal(t, 1, c.WindowFailures)
	})
}

// Without a pinned time the statements run on the database's clock.
func TestBreakerRunsOnTheDatabaseClock(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		_, _, err := models.RecordBreakerCalls(db, "crm", failures(3), time.Minute, time.Time{})
		require.NoError(t, err)
		ok, _, err := models.TripBreaker(db, "crm", breakerLimits, reason, time.Now(), time.Time{})
		require.NoError(t, err)
		require.True(t, ok)
		taken, wait, err := models.TakeProbe(db, "crm", breakerLimits.ProbeEvery, time.Time{})
		require.NoError(t, err)
		require.False(t, taken, "the first probe waits an interval after the breaker opened")
		require.InDelta(t, breakerLimits.ProbeEvery, wait, float64(5*time.Second))
		b, err := models.ReadBreaker(db, "crm")
		require.NoError(t, err)
		require.InDelta(t, float64(time.Now().Unix()), b.OpenedAt, 60, "opened at the database's now")
	})
}
