package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// claimOrder stores order 1 with payload (whose content hash is hash) and
// its link to crm, as edit changes it, and claims the link.
func claimOrder(t *testing.T, db *gorm.DB, payload, hash string, now time.Time, edit ...func(*models.Link)) models.ClaimedLink {
	t.Helper()
	_, err := models.UpsertRecord(db, "order", "1", payload, hash, now)
	require.NoError(t, err)
	require.NoError(t, models.EnsureLinks(db, "order", "1", []models.LinkSpec{{Service: "crm", ExternalKey: "k", IdempotencyKey: "i"}}, now))
	for _, f := range edit {
		var l models.Link
		require.NoError(t, db.Take(&l).Error)
		f(&l)
		require.NoError(t, db.Save(&l).Error)
	}
	claimed, err := models.ClaimDue(db, "w/1", now, time.Minute, 10, nil)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	return claimed[0]
}

// A send that fails for a state its record has since left (written again,
// or deleted, while the call was out) goes back to new with fresh
// attempts: what the record now wants has not been tried. A failure of the
// state the record still holds, or of a send made for no state, stays
// failed. README: "a record deleted or written again while a link is being
// sent is sent again when that send ends, as what the record now wants".
func TestAFailureOfAStateTheRecordLeftIsSentAgain(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	v1, h1, _ := models.CanonicalPayload([]byte(`{"title":""}`))
	v2, h2, _ := models.CanonicalPayload([]byte(`{"title":"Order 1"}`))
	for _, tc := range []struct {
		name     string
		meantime func(t *testing.T, db *gorm.DB) // while the send is out
		sentFor  func(claimed models.ClaimedLink) string
		want     models.Status
	}{
		{"the record was fixed during the send", func(t *testing.T, db *gorm.DB) {
			_, err := models.UpsertRecord(db, "order", "1", v2, h2, now)
			require.NoError(t, err)
		}, func(c models.ClaimedLink) string { return c.ContentHash }, models.StatusNew},
		{"the record was deleted during the send", func(t *testing.T, db *gorm.DB) {
			_, err := models.TombstoneRecords(db, []models.RecordKey{{LocalType: "order", LocalID: "1"}}, now)
			require.NoError(t, err)
		}, func(c models.ClaimedLink) string { return c.ContentHash }, models.StatusNew},
		{"the record is as it was sent", func(*testing.T, *gorm.DB) {},
			func(c models.ClaimedLink) string { return c.ContentHash }, models.StatusFailed},
		{"the send was for no state of the record", func(t *testing.T, db *gorm.DB) {
			_, err := models.UpsertRecord(db, "order", "1", v2, h2, now)
			require.NoError(t, err)
		}, func(models.ClaimedLink) string { return "" }, models.StatusFailed},
		{"a delete failed, and the record was written again", func(t *testing.T, db *gorm.DB) {
			_, err := models.UpsertRecord(db, "order", "1", v2, h2, now)
			require.NoError(t, err)
		}, func(models.ClaimedLink) string { return models.DeletedHash }, models.StatusNew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				claimed := claimOrder(t, db, v1, h1, now)
				tc.meantime(t, db)

				out := models.LinkOutcome{Link: claimed.Link, Status: models.StatusFailed, Attempts: 3, NextAttempt: now,
					LastError: "HTTP 422: title is required", LastHTTP: 422, SentFor: tc.sentFor(claimed)}
				_, err := models.FinishLinks(db, []models.LinkOutcome{out}, now)
				require.NoError(t, err)
				l, err := models.LinkByID(db, claimed.ID)
				require.NoError(t, err)
				require.Equal(t, tc.want, l.Status)
				require.Empty(t, l.LeaseOwner, "the lease is over either way")
				require.Equal(t, "HTTP 422: title is required", l.LastError, "what the provider said stays on the link")
				if tc.want == models.StatusNew {
					require.Zero(t, l.Attempts, "the record's new state gets attempts of its own")
					require.Nil(t, l.FailedAt, "the link never entered failed")
				} else {
					require.Equal(t, 3, l.Attempts)
					require.NotNil(t, l.FailedAt)
				}
			})
		})
	}
}

// A link marked deleted at the provider loses the mark when a send
// reaches a live object (a success: the object it updated, or one it made
// anew) or learns that the marked object is gone (ObjectGone); a failure
// keeps it.
func TestTheRemoteDeletionMarkGoesWithTheObject(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	v1, h1, _ := models.CanonicalPayload([]byte(`{"title":"Order 1"}`))
	for _, tc := range []struct {
		name     string
		outcome  func(models.LinkOutcome) models.LinkOutcome
		wantMark bool
	}{
		{"a new object made", func(o models.LinkOutcome) models.LinkOutcome {
			o.Status, o.ExternalID, o.PushedHash, o.ObjectGone, o.NextKey = models.StatusSuccess, "deal_2", h1, true, "i-g2"
			return o
		}, false},
		{"the object updated after all", func(o models.LinkOutcome) models.LinkOutcome {
			o.Status, o.ExternalID, o.PushedHash = models.StatusSuccess, "deal_1", h1
			return o
		}, false},
		{"the object known gone, its create to retry", func(o models.LinkOutcome) models.LinkOutcome {
			o.Status, o.ObjectGone, o.NeedsLookup = models.StatusRetry, true, true
			return o
		}, false},
		{"the update refused", func(o models.LinkOutcome) models.LinkOutcome {
			o.Status, o.LastError, o.LastHTTP = models.StatusFailed, "HTTP 404: no deal deal_1", 404
			return o
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				claimed := claimOrder(t, db, v1, h1, now, func(l *models.Link) {
					l.ExternalID, l.RemoteDeletedAt = "deal_1", &now
				})
				out := tc.outcome(models.LinkOutcome{Link: claimed.Link, Attempts: 1, NextAttempt: now, SentFor: h1})
				_, err := models.FinishLinks(db, []models.LinkOutcome{out}, now)
				require.NoError(t, err)
				l, err := models.LinkByID(db, claimed.ID)
				require.NoError(t, err)
				require.Equal(t, tc.wantMark, l.RemoteDeletedAt != nil)
			})
		})
	}
}

// A send that found its link's object gone (ObjectGone) gives it up with
// its finish, whether the create that followed made a new object or is to
// be retried, and so does a delete done: an event about the old object,
// which carries our key, must not find the link waiting for an id to adopt
// (or mark it deleted) once the link is re-created. A send that reached the
// object gives nothing up, and neither does a finish whose lease was taken
// away meanwhile: the link keeps its new owner's state, and its object.
func TestAFinishGivesUpTheObjectItsSendFoundGone(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	v1, h1, _ := models.CanonicalPayload([]byte(`{"title":"Order 1"}`))
	for _, tc := range []struct {
		name     string
		outcome  func(models.LinkOutcome) models.LinkOutcome
		stolen   bool // the lease was taken away before the finish
		wantKept bool
	}{
		{"a new object made", func(o models.LinkOutcome) models.LinkOutcome {
			o.Status, o.ExternalID, o.PushedHash, o.ObjectGone, o.NextKey = models.StatusSuccess, "deal_2", h1, true, "i-g2"
			return o
		}, false, true},
		{"its create to retry", func(o models.LinkOutcome) models.LinkOutcome {
			o.Status, o.ObjectGone, o.NeedsLookup, o.NextKey = models.StatusRetry, true, true, "i-g2"
			return o
		}, false, true},
		{"the object deleted, as its record was", func(o models.LinkOutcome) models.LinkOutcome {
			o.Status, o.PushedHash, o.SentFor, o.NextKey = models.StatusDeleted, models.DeletedHash, models.DeletedHash, "i-g2"
			return o
		}, false, true},
		{"the object updated after all", func(o models.LinkOutcome) models.LinkOutcome {
			o.Status, o.ExternalID, o.PushedHash = models.StatusSuccess, "deal_1", h1
			return o
		}, false, false},
		{"its lease taken away meanwhile", func(o models.LinkOutcome) models.LinkOutcome {
			o.Status, o.ObjectGone, o.NeedsLookup, o.NextKey = models.StatusRetry, true, true, "i-g2"
			return o
		}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				claimed := claimOrder(t, db, v1, h1, now, func(l *models.Link) { l.ExternalID = "deal_1" })
				if tc.stolen {
					require.NoError(t, db.Model(&models.Link{}).Where("id = ?", claimed.ID).Update("lease_owner", "w/2").Error)
				}
				out := tc.outcome(models.LinkOutcome{Link: claimed.Link, Attempts: 1, NextAttempt: now, SentFor: h1})
				_, err := models.FinishLinks(db, []models.LinkOutcome{out}, now)
				require.NoError(t, err)
				kept, err := models.DeletedObject(db, claimed.ID, "deal_1")
				require.NoError(t, err)
				require.Equal(t, tc.wantKept, kept, "whether deal_1 is kept as an object the link gave up")
			})
		})
	}
}
