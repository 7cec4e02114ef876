package models_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// The Services page's last hour of calls comes from minutes counted by
// refresh-stats: the minutes of the window, each service apart, an attempt
// written late into the current minute counted at the next refresh, and
// nothing older than the window.
func TestCallsPerMinuteByService(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 30, 0, time.UTC)
		links := map[string]int64{}
		for _, svc := range []string{"crm", "payments"} {
			l := models.Link{LocalType: "order", LocalID: svc, ExternalService: svc, ExternalKey: "k-" + svc,
				Status: models.StatusSuccess, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
			require.NoError(t, db.Create(&l).Error)
			links[svc] = l.ID
		}
		n := 0
		call := func(svc string, o models.Outcome, ago time.Duration) {
			n++
			require.NoError(t, db.Create(&models.Attempt{LinkID: links[svc], Number: n, Operation: "deal.create",
				Outcome: o, Worker: "w", CreatedAt: now.Add(-ago)}).Error)
		}
		call("crm", models.OutcomeOK, 10*time.Second)
		call("crm", models.OutcomeOK, 59*time.Minute)
		call("crm", models.OutcomeTemporary, 30*time.Minute)
		call("crm", models.OutcomePermanent, 61*time.Minute) // before the window
		call("payments", models.OutcomeAmbiguous, 5*time.Minute)
		require.NoError(t, models.RefreshServiceMinutes(db, now))

		count := func() map[string]int64 {
			got, err := models.CountOutcomesSince(db, now.Add(-time.Hour))
			require.NoError(t, err)
			out := map[string]int64{}
			for _, c := range got {
				out[fmt.Sprint(c.Service, "/", c.Outcome)] = c.N
			}
			return out
		}
		require.Equal(t, map[string]int64{"crm/ok": 2, "crm/temporary": 1, "payments/ambiguous": 1}, count())

		call("crm", models.OutcomeOK, 1*time.Second) // written just after the refresh
		require.Equal(t, int64(2), count()["crm/ok"], "not counted before the next refresh")
		require.NoError(t, models.RefreshServiceMinutes(db, now.Add(5*time.Second)))
		require.Equal(t, int64(3), count()["crm/ok"], "the current minute is counted again")

		require.NoError(t, models.RefreshServiceMinutes(db, now.Add(3*time.Hour)))
		var kept int64
		require.NoError(t, db.Model(&models.StatServiceMinute{}).Where("minute < ?", now.Add(time.Hour)).Count(&kept).Error)
		require.Zero(t, kept, "minutes older than two hours are pruned")
	})
}
