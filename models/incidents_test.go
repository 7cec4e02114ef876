package models_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// Of many openers at once, one opens the incident and queues its
// notifications; once it is resolved, the next opening is a new incident.
func TestOneOpenIncidentPerRuleAndSubject(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		change := models.IncidentChange{State: "opened", Title: "crm paused", Text: "resume it", Channels: []string{"mail", "ops"}, At: now}
		inc := models.Incident{Rule: "service_paused", Subject: "crm", URL: "/services"}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				opened, err := models.OpenIncident(db, inc, change)
				require.NoError(t, err)
				if opened {
					mu.Lock()
					won++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 1, won)
		var n int64
		require.NoError(t, db.Model(&models.IncidentNotification{}).Count(&n).Error)
		require.EqualValues(t, 2, n, "one notification per channel")

		open, err := models.OpenIncidents(db)
		require.NoError(t, err)
		require.Len(t, open, 1)
		ok, err := models.ResolveIncident(db, open[0].ID, models.IncidentChange{State: "resolved", At: now.Add(time.Minute)})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = models.ResolveIncident(db, open[0].ID, models.IncidentChange{State: "resolved", At: now.Add(time.Minute)})
		require.NoError(t, err)
		require.False(t, ok, "resolved once")
		change.At = now.Add(2 * time.Minute)
		opened, err := models.OpenIncident(db, inc, change)
		require.NoError(t, err)
		require.True(t, opened, "a new incident once the last is over")
	})
}

func TestFinishTaskCountsFailedRunsInARow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		require.NoError(t, models.RegisterTask(db, "prune-events", now, now))
		run := func(failure string) int {
			c := models.TaskClaim{Name: "prune-events", Token: failure + now.String(), Instance: "a", Now: now, Until: now.Add(time.Minute)}
			won, err := models.ClaimTask(db, c)
			require.NoError(t, err)
			require.True(t, won)
			_, err = models.FinishTask(db, "prune-events", c.Token, models.TaskRun{Instance: "a", Started: now, Done: now, Error: failure})
			require.NoError(t, err)
			task, err := models.GetScheduledTask(db, "prune-events")
			require.NoError(t, err)
			now = now.Add(time.Second)
			return task.Failures
		}
		require.Equal(t, 1, run("locked"))
		require.Equal(t, 2, run("locked"))
		require.Equal(t, 0, run(""), "a success ends the run of failures")
		require.Equal(t, 1, run("locked"))
	})
}

func TestSamplesAsOfTheNewestOldEnoughElseTheOldest(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		var samples []models.AlertSample
		for i := range 5 {
			samples = append(samples, models.AlertSample{Rule: "failed_links", Subject: "crm", TakenAt: t0.Add(time.Duration(i) * time.Minute), Anchor: t0, Value: int64(10 * i)})
		}
		samples = append(samples, models.AlertSample{Rule: "failed_links", Subject: "erp", TakenAt: t0.Add(3 * time.Minute), Anchor: t0, Value: 7})
		require.NoError(t, models.RecordSamples(db, samples))
		require.NoError(t, models.RecordSamples(db, samples[:1]), "a sample taken twice is kept once")

		got, err := models.SamplesAsOf(db, "failed_links", t0.Add(2*time.Minute+30*time.Second))
		require.NoError(t, err)
		require.EqualValues(t, 20, got["crm"].Value, "the newest at or before the time")
		require.EqualValues(t, 7, got["erp"].Value, "none that old: the oldest")

		require.NoError(t, models.PruneSamples(db, "failed_links", t0.Add(2*time.Minute+30*time.Second)))
		got, err = models.SamplesAsOf(db, "failed_links", t0.Add(2*time.Minute+30*time.Second))
		require.NoError(t, err)
		require.EqualValues(t, 20, got["crm"].Value, "the newest before the cut is kept")
		var n int64
		require.NoError(t, db.Model(&models.AlertSample{}).Where("subject = 'crm'").Count(&n).Error)
		require.EqualValues(t, 3, n, "minutes 2, 3 and 4")
	})
}

// A check whose reads predate another's resolution does not open the
// incident again: its finding is older than the resolution.
func TestAStaleCheckDoesNotReopenAResolvedIncident(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		inc := models.Incident{Rule: "stuck_queue", Subject: "erp"}
		opened, err := models.OpenIncident(db, inc, models.IncidentChange{State: "opened", Title: "t", Text: "x", At: now})
		require.NoError(t, err)
		require.True(t, opened)
		open, err := models.OpenIncidents(db)
		require.NoError(t, err)
		_, err = models.ResolveIncident(db, open[0].ID, models.IncidentChange{State: "resolved", At: now.Add(time.Minute)})
		require.NoError(t, err)
		opened, err = models.OpenIncident(db, inc, models.IncidentChange{State: "opened", Title: "t", Text: "x", At: now.Add(30 * time.Second)})
		require.NoError(t, err)
		require.False(t, opened, "a finding from before the resolution")
		opened, err = models.OpenIncident(db, inc, models.IncidentChange{State: "opened", Title: "t", Text: "x", At: now.Add(2 * time.Minute)})
		require.NoError(t, err)
		require.True(t, opened, "a finding from after it")
	})
}
