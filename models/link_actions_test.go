package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// Only a link waiting to be sent can be marked failed, decided by the
// update itself: a send that ended a moment before is never overwritten.
func TestMarkFailedOnlyALinkWaitingToBeSent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		for _, tc := range []struct {
			status models.Status
			err    string
		}{
			{models.StatusNew, ""},
			{models.StatusRetry, ""},
			{models.StatusProcessing, "being sent right now"},
			{models.StatusSuccess, "This link is synced"},
			{models.StatusFailed, "already failed"},
		} {
			l := models.Link{LocalType: "order", LocalID: string(tc.status), ExternalService: "crm", ExternalKey: "k-" + string(tc.status),
				Status: tc.status, LastError: "before", NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
			require.NoError(t, db.Create(&l).Error)
			got, err := models.MarkFailed(db, l.ID, "ana@example.com", "customer cancelled", now)
			after, readErr := models.LinkByID(db, l.ID)
			require.NoError(t, readErr)
			if tc.err == "" {
				require.NoError(t, err, tc.status)
				require.Equal(t, models.StatusFailed, got.Status)
				require.Equal(t, "Marked failed by ana@example.com: customer cancelled", after.LastError)
				continue
			}
			require.ErrorContains(t, err, tc.err, tc.status)
			require.Equal(t, tc.status, after.Status, "left as it was")
			require.Equal(t, "before", after.LastError)
		}
	})
}
