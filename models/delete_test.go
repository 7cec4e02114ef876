package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// claimOne stores order 1, links it to crm and claims the link.
func claimOne(t *testing.T, db *gorm.DB, now time.Time) models.ClaimedLink {
	t.Helper()
	v, h, _ := models.CanonicalPayload([]byte(`{"title":"Order 1"}`))
	return claimOrder(t, db, v, h, now)
}

func finish(t *testing.T, db *gorm.DB, o models.LinkOutcome, now time.Time) models.Link {
	t.Helper()
	o.NextAttempt = now
	_, err := models.FinishLinks(db, []models.LinkOutcome{o}, now)
	require.NoError(t, err)
	l, err := models.LinkByID(db, o.Link.ID)
	require.NoError(t, err)
	return *l
}

// A record deleted while its link was being sent as an update: the
// update's success is no longer what the record wants, and the link goes
// again (as a delete). The claim said the record lived.
func TestADeleteDuringASendIsPushedAgain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		c := claimOne(t, db, now)
		require.False(t, c.LeaseDeletes)
		marked, err := models.TombstoneRecords(db, []models.RecordKey{{LocalType: "order", LocalID: "1"}}, now)
		require.NoError(t, err)
		require.True(t, marked[models.RecordKey{LocalType: "order", LocalID: "1"}])
		l := finish(t, db, models.LinkOutcome{Link: c.Link, Status: models.StatusSuccess, ExternalID: "deal_1", PushedHash: c.ContentHash}, now)
		require.Equal(t, models.StatusNew, l.Status)
		require.Equal(t, "deal_1", l.ExternalID, "the object the delete is to remove")

		again, err := models.ClaimDue(db, "w/2", now, time.Minute, 10, nil)
		require.NoError(t, err)
		require.Len(t, again, 1)
		require.True(t, again[0].LeaseDeletes, "the claim tells the sender the record is deleted")
	})
}

// A record written again while its delete was being sent: the delete done
// is not what the record wants any more, and the link goes again, as a
// create (no object, the next key). A delete done on a record still
// deleted finishes deleted.
func TestAWriteDuringADeleteIsPushedAgainAsACreate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		key := models.RecordKey{LocalType: "order", LocalID: "1"}
		c := claimOne(t, db, now)
		_, err := models.FinishLinks(db, []models.LinkOutcome{{Link: c.Link, Status: models.StatusSuccess, ExternalID: "deal_1",
			PushedHash: c.ContentHash, NextAttempt: now}}, now)
		require.NoError(t, err)
		_, err = models.TombstoneRecords(db, []models.RecordKey{key}, now)
		require.NoError(t, err)
		require.NoError(t, models.EnsureLinks(db, "order", "1", []models.LinkSpec{{Service: "crm", ExternalKey: "k", IdempotencyKey: "i"}}, now))
		claimed, err := models.ClaimDue(db, "w/2", now, time.Minute, 10, nil)
		require.NoError(t, err)
		require.True(t, claimed[0].LeaseDeletes)

		v, h, _ := models.CanonicalPayload([]byte(`{"title":"Order 1"}`))
		changed, err := models.UpsertRecord(db, "order", "1", v, h, now)
		require.NoError(t, err)
		require.True(t, changed, "the same payload brings a deleted record back")
		l := finish(t, db, models.LinkOutcome{Link: claimed[0].Link, Status: models.StatusDeleted, PushedHash: models.DeletedHash, NextKey: "i-g2"}, now)
		require.Equal(t, models.StatusNew, l.Status)
		require.Empty(t, l.ExternalID, "the object is gone: the next send creates one")
		require.Equal(t, "i-g2", l.IdempotencyKey)

		_, err = models.TombstoneRecords(db, []models.RecordKey{key}, now)
		require.NoError(t, err)
		claimed, err = models.ClaimDue(db, "w/3", now, time.Minute, 10, nil)
		require.NoError(t, err)
		l = finish(t, db, models.LinkOutcome{Link: claimed[0].Link, Status: models.StatusDeleted, PushedHash: models.DeletedHash, NextKey: "i-g3"}, now)
		require.Equal(t, models.StatusDeleted, l.Status)
		require.Equal(t, "i-g3", l.IdempotencyKey)
	})
}

// RecordHashes names the stored hash of live and deleted records alike,
// and leaves out keys of no record.
func TestRecordHashesOfLiveAndDeletedRecords(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		live, dead := models.RecordKey{LocalType: "order", LocalID: "1"}, models.RecordKey{LocalType: "order", LocalID: "2"}
		v1, h1, _ := models.CanonicalPayload([]byte(`{"n": 1}`))
		v2, h2, _ := models.CanonicalPayload([]byte(`{"n": 2}`))
		_, err := models.UpsertRecords(db, []models.RecordWrite{{RecordKey: live, Payload: v1, Hash: h1}, {RecordKey: dead, Payload: v2, Hash: h2}}, now)
		require.NoError(t, err)
		_, err = models.TombstoneRecords(db, []models.RecordKey{dead}, now)
		require.NoError(t, err)
		got, err := models.RecordHashes(db, []models.RecordKey{live, dead, {LocalType: "order", LocalID: "3"}})
		require.NoError(t, err)
		require.Equal(t, map[models.RecordKey]string{live: h1, dead: h2}, got)
	})
}
