package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// A link keeps the traceparent of the request that last queued it while
// its send goes on (a retry is the same trace), forgets it once done, so a
// later push queued without one joins no old trace, and keeps one a newer
// request set while it was being sent, for the push that request queued.
func TestALinkKeepsTheTraceOfTheRequestThatQueuedIt(t *testing.T) {
	const a, b = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-1bf7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		upsert := func(payload, trace string) string {
			v, h, _ := models.CanonicalPayload([]byte(payload))
			_, err := models.UpsertRecord(db, "order", "1", v, h, now)
			require.NoError(t, err)
			require.NoError(t, models.EnsureLinks(db, "order", "1", []models.LinkSpec{{Service: "crm", ExternalKey: "k", IdempotencyKey: "i", TraceParent: trace}}, now))
			return h
		}
		claim := func() models.ClaimedLink {
			claimed, err := models.ClaimDue(db, "w/1", now, time.Minute, 10, nil)
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			return claimed[0]
		}
		finish := func(c models.ClaimedLink, status models.Status) {
			_, err := models.FinishLinks(db, []models.LinkOutcome{{Link: c.Link, Status: status, ExternalID: "deal_1",
				PushedHash: c.ContentHash, Attempts: 1, NextAttempt: now}}, now)
			require.NoError(t, err)
		}
		stored := func() string {
			var l models.Link
			require.NoError(t, db.Where("local_id = ?", "1").Take(&l).Error)
			return l.TraceParent
		}

		upsert(`{"n":1}`, a)
		c := claim()
		require.Equal(t, a, c.TraceParent, "the claim reads the request's trace")
		finish(c, models.StatusRetry)
		require.Equal(t, a, stored(), "a retry is the same send, in the same trace")
		c = claim()
		finish(c, models.StatusSuccess)
		require.Empty(t, stored(), "done, the link forgets the trace")

		upsert(`{"n":2}`, a)
		c = claim()
		upsert(`{"n":3}`, b) // while the push of n=2 is out
		finish(c, models.StatusSuccess)
		require.Equal(t, b, stored(), "the newer request's trace stays for the push it queued")
		require.Equal(t, b, claim().TraceParent)
	})
}
