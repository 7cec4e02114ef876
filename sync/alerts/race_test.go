package alerts

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
)

// Three instances on one database, each checking and delivering from
// many goroutines at once: each incident opens once, and each of its
// notifications reaches the receiver once.
func TestInstancesOpenEachIncidentOnceAndSendEachNotificationOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clk := clock.NewFake(t0)
		rec := &recorder{}
		var instances []*Alerts
		for range 3 {
			a := New(db, config.Alerts{Repeat: 5 * time.Minute}, map[string]notify.Channel{"ops": rec, "mail": rec}, clk, slog.New(slog.DiscardHandler))
			instances = append(instances, a)
		}
		services := []string{"crm", "erp", "billing", "shop"}
		for _, s := range services {
			_, _, err := models.Pause(db, models.ServicePause{Service: s, PausedBy: "ana@example.com", PausedAt: t0.Add(-time.Hour)})
			require.NoError(t, err)
		}
		storm := func() {
			var wg sync.WaitGroup
			for g := range 30 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a := instances[g%3]
					for range 3 {
						require.NoError(t, a.Check(context.Background()))
						require.NoError(t, a.Deliver(context.Background()))
					}
				}()
			}
			wg.Wait()
			for _, a := range instances { // what the storm left claimed-but-not-due, none
				require.NoError(t, a.Deliver(context.Background()))
			}
		}
		sentOnce := func(want int) {
			t.Helper()
			msgs := rec.messages()
			require.Len(t, msgs, want)
			ids := map[string]bool{}
			for _, m := range msgs {
				require.False(t, ids[m.ID], "notification %s sent twice", m.ID)
				ids[m.ID] = true
			}
		}

		storm()
		var incidents int64
		require.NoError(t, db.Model(&models.Incident{}).Count(&incidents).Error)
		require.EqualValues(t, 4, incidents, "one incident per paused service")
		sentOnce(8) // 4 incidents × 2 channels

		clk.Advance(5 * time.Minute)
		storm()
		sentOnce(16)

		for _, s := range services {
			_, err := models.Resume(db, s)
			require.NoError(t, err)
		}
		clk.Advance(time.Second)
		storm()
		sentOnce(24)
		open, err := models.OpenIncidents(db)
		require.NoError(t, err)
		require.Empty(t, open)
		var pending int64
		require.NoError(t, db.Model(&models.IncidentNotification{}).Where("status <> ?", models.NotificationSent).Count(&pending).Error)
		require.Zero(t, pending)
	})
}
