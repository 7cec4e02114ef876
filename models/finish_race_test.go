package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// finishRace is a record with one link claimed while the record was v1.
type finishRace struct {
	db      *gorm.DB
	now     time.Time
	claimed models.ClaimedLink
	v2, h2  string
}

func newFinishRace(t *testing.T) *finishRace {
	db := dbtest.Postgres(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	v1, h1, _ := models.CanonicalPayload([]byte(`{"status":"pending"}`))
	v2, h2, _ := models.CanonicalPayload([]byte(`{"status":"paid"}`))
	claimed := claimOrder(t, db, v1, h1, now)
	require.Equal(t, h1, claimed.ContentHash)
	return &finishRace{db: db, now: now, claimed: claimed, v2: v2, h2: h2}
}

// finishV1 writes the outcome of a successful push of v1.
func (r *finishRace) finishV1(db *gorm.DB) error {
	_, err := models.FinishLinks(db, []models.LinkOutcome{{Link: r.claimed.Link, Status: models.StatusSuccess,
		ExternalID: "deal_1", PushedHash: r.claimed.ContentHash, NextAttempt: r.now}}, r.now)
	return err
}

func (r *finishRace) requirePushedAgain(t *testing.T) {
	l, err := models.LinkByID(r.db, r.claimed.ID)
	require.NoError(t, err)
	require.Equal(t, models.StatusNew, l.Status, "the record changed after v1 was pushed: the link must be pushed again")
}

// On Postgres, under READ COMMITTED, the finish of a push and a change of
// its record must not each miss the other: the change is pushed again.
// (SQLite lets one writer in at a time, so it cannot interleave them.)
func TestAChangeDuringAFinishIsPushedAgain(t *testing.T) {
	t.Run("an upsert commits while the finish waits", func(t *testing.T) {
		r := newFinishRace(t)
		u := r.db.Begin() // the upsert of v2, not yet committed
		_, err := models.UpsertRecord(u, "order", "1", r.v2, r.h2, r.now)
		require.NoError(t, err)
		require.NoError(t, models.EnsureLinks(u, "order", "1",
			[]models.LinkSpec{{Service: "crm", ExternalKey: "k", IdempotencyKey: "i"}}, r.now))
		done := make(chan error, 1)
		go func() { done <- r.finishV1(r.db) }()
		time.Sleep(300 * time.Millisecond) // the finish now waits on the upsert
		require.NoError(t, u.Commit().Error)
		require.NoError(t, <-done)
		r.requirePushedAgain(t)
	})
	t.Run("a webhook changes the record while the finish is uncommitted", func(t *testing.T) {
		r := newFinishRace(t)
		w := r.db.Begin() // the outbox writer: its statements ran, not yet committed
		require.NoError(t, r.finishV1(w))
		done := make(chan error, 1)
		go func() { // a webhook's effect, as sync/inbox applies it
			done <- r.db.Transaction(func(tx *gorm.DB) error {
				rec, err := models.LockRecord(tx, "order", "1")
				if err != nil {
					return err
				}
				if err := models.SetRecordPayload(tx, rec, r.v2, r.h2, []string{"status"}, r.now, r.now); err != nil {
					return err
				}
				return models.RequeueOtherLinks(tx, "order", "1", "payments", r.now)
			})
		}()
		time.Sleep(300 * time.Millisecond) // the webhook now waits on the finish
		require.NoError(t, w.Commit().Error)
		require.NoError(t, <-done)
		r.requirePushedAgain(t)
	})
}
