package models_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

var refusalEpoch = time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)

// Dozens of writers (instances, or one instance's services) adding to the
// same rows at once lose nothing: every count lands, in its hour, and the
// row keeps the latest refusal's words whichever writer came last.
func TestConcurrentRefusalCountsAddUpExactly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		const writers, each = 40, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					// Two hours, two reasons; the latest refusal of all is writer 0's first.
					at := refusalEpoch.Add(time.Duration(w*each+i) * 10 * time.Second)
					if w == 0 && i == 0 {
						at = refusalEpoch.Add(75 * time.Minute)
					}
					reason := models.RefusedSignature
					if w%4 == 3 {
						reason = models.RefusedTimestamp
					}
					errs <- models.RecordRefusals(db, "stripe", reason, int64(w+1), at, fmt.Sprintf("refusal %d/%d", w, i))
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}

		var want int64
		for w := range writers {
			want += int64(w+1) * each
		}
		var rows []models.WebhookRefusal
		require.NoError(t, db.Order("hour, reason").Find(&rows).Error)
		var got int64
		for _, r := range rows {
			got += r.N
			require.Equal(t, "stripe", r.Service)
			require.Zero(t, r.Hour.Minute(), "rows are by the hour")
		}
		require.Equal(t, want, got)
		require.Len(t, rows, 4, "two hours × two reasons")

		sum, err := models.RefusalsSince(db, refusalEpoch.Add(-time.Minute))
		require.NoError(t, err)
		require.Equal(t, want, sum["stripe"].N)
		require.True(t, sum["stripe"].LastAt.Equal(refusalEpoch.Add(75*time.Minute)), "got %s", sum["stripe"].LastAt)
		require.Equal(t, "refusal 0/0", sum["stripe"].LastDetail, "the latest refusal's words, not the last writer's")
		require.Equal(t, models.RefusedSignature, sum["stripe"].LastReason)
	})
}

// The summary counts the last day by service and names the latest
// refusal's reason; pruning drops the hours past the retention.
func TestRefusalSummaryAndPrune(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := refusalEpoch
		add := func(service, reason string, n int64, ago time.Duration, detail string) {
			require.NoError(t, models.RecordRefusals(db, service, reason, n, now.Add(-ago), detail))
		}
		add("stripe", models.RefusedSignature, 5, 30*time.Hour, "old")
		add("stripe", models.RefusedSignature, 3, 3*time.Hour, "stripe webhook: bad webhook signature: no v1 signature matches")
		add("stripe", models.RefusedTimestamp, 2, 10*time.Minute, "stripe webhook: webhook timestamp outside tolerance: signed 10m0s ago, tolerance 5m0s")
		add("crm", models.RefusedShape, 1, time.Hour, "bad event: the body is not a JSON object")

		sum, err := models.RefusalsSince(db, now.Add(-24*time.Hour))
		require.NoError(t, err)
		require.Len(t, sum, 2)
		require.EqualValues(t, 5, sum["stripe"].N, "the refusals of 30 h ago are not counted")
		require.Equal(t, models.RefusedTimestamp, sum["stripe"].LastReason)
		require.Contains(t, sum["stripe"].LastDetail, "signed 10m0s ago")
		require.True(t, sum["stripe"].LastAt.Equal(now.Add(-10*time.Minute)))
		require.EqualValues(t, 1, sum["crm"].N)
		require.Equal(t, models.RefusedShape, sum["crm"].LastReason)

		n, err := models.PruneRefusals(db, now.Add(-24*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "only the hour past the retention")
		var left int64
		require.NoError(t, db.Model(&models.WebhookRefusal{}).Count(&left).Error)
		require.EqualValues(t, 3, left)
	})
}

// The last good delivery is the newest event's first receipt; none yet is
// the zero time, not an error.
func TestLastEventAt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		at, err := models.LastEventAt(db, "stripe")
		require.NoError(t, err)
		require.True(t, at.IsZero())
		for i, ago := range []time.Duration{2 * time.Hour, 5 * time.Minute, time.Hour} {
			ok, err := models.RecordEvent(db, models.ProcessedEvent{Provider: "stripe", EventID: fmt.Sprint("evt_", i),
				EventType: "x", ReceivedAt: refusalEpoch.Add(-ago), Outcome: models.EventApplied, Payload: "{}"})
			require.NoError(t, err)
			require.True(t, ok)
		}
		ok, err := models.RecordEvent(db, models.ProcessedEvent{Provider: "crm", EventID: "later", EventType: "x",
			ReceivedAt: refusalEpoch, Outcome: models.EventApplied, Payload: "{}"})
		require.NoError(t, err)
		require.True(t, ok)
		at, err = models.LastEventAt(db, "stripe")
		require.NoError(t, err)
		require.True(t, at.Equal(refusalEpoch.Add(-5*time.Minute)), "got %s", at)
	})
}
