package models_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

var (
	effectsNow    = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	effectsBefore = effectsNow.Add(-time.Hour)
)

// effectLink inserts a link of order/localID to service in a status, with
// two attempts behind it, last changed an hour before effectsNow, and what
// edit changes.
func effectLink(t *testing.T, db *gorm.DB, localID, service string, status models.Status, edit ...func(*models.Link)) models.Link {
	t.Helper()
	l := models.Link{LocalType: "order", LocalID: localID, ExternalService: service, ExternalKey: "site_order_" + localID,
		ExternalID: "deal_" + localID, Status: status, Attempts: 2, NextAttemptAt: effectsBefore, LastError: "before",
		PushedHash: "h-before", CreatePayload: `{"status":"pending"}`, CreatedAt: effectsBefore, UpdatedAt: effectsBefore}
	for _, f := range edit {
		f(&l)
	}
	require.NoError(t, db.Create(&l).Error)
	return l
}

// requireUntouched fails when the link differs from how effectLink made it.
func requireUntouched(t *testing.T, db *gorm.DB, l models.Link) {
	t.Helper()
	got, err := models.LinkByID(db, l.ID)
	require.NoError(t, err)
	require.Equal(t, l.Status, got.Status, "link %d (%s) must be left as it was", l.ID, l.Status)
	require.Equal(t, 2, got.Attempts, "link %d (%s) keeps its attempts", l.ID, l.Status)
	require.True(t, got.UpdatedAt.Equal(effectsBefore), "link %d (%s) was written at %s", l.ID, l.Status, got.UpdatedAt)
	require.Equal(t, "before", got.LastError)
	require.Equal(t, "h-before", got.PushedHash)
	require.Equal(t, l.ExternalID, got.ExternalID)
	require.Nil(t, got.RemoteDeletedAt)
}

// A deal that differs from our state queues a push of a link in success
// only: one claimed by the outbox since it was read is being sent, and one
// queued, retrying or failed keeps its turn and its attempts.
func TestRequeueSyncedLinkOnlyALinkInSuccess(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, status := range models.Statuses {
			l := effectLink(t, db, string(status), "crm", status)
			require.NoError(t, models.RequeueSyncedLink(db, l.ID, effectsNow))
			if status != models.StatusSuccess {
				requireUntouched(t, db, l)
				continue
			}
			got, err := models.LinkByID(db, l.ID)
			require.NoError(t, err)
			require.Equal(t, models.StatusNew, got.Status)
			require.True(t, got.NextAttemptAt.Equal(effectsNow), "due now, not %s", got.NextAttemptAt)
			require.True(t, got.UpdatedAt.Equal(effectsNow))
			require.Equal(t, 2, got.Attempts, "a requeue of a synced link leaves its attempts")
		}
	})
}

// A deletion marks every link but one being sent, and says so.
func TestMarkRemoteDeletedNeverOverwritesALinkBeingSent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, status := range models.Statuses {
			l := effectLink(t, db, string(status), "crm", status, func(l *models.Link) { l.LastHTTPCode = 503 })
			marked, err := models.MarkRemoteDeleted(db, l.ID, "crm", l.ExternalID, "crm reports deal_1 deleted (event evt_7).", effectsNow)
			require.NoError(t, err)
			kept, err := models.DeletedObject(db, l.ID, l.ExternalID)
			require.NoError(t, err)
			if status == models.StatusProcessing {
				require.False(t, marked, "a link being sent is not marked")
				require.False(t, kept, "a link being sent has given nothing up")
				requireUntouched(t, db, l)
				continue
			}
			require.True(t, kept, "%s: the deleted object is kept as one the link gave up", status)
			require.True(t, marked, status)
			got, err := models.LinkByID(db, l.ID)
			require.NoError(t, err)
			require.Equal(t, models.StatusFailed, got.Status)
			require.NotNil(t, got.RemoteDeletedAt)
			require.True(t, got.RemoteDeletedAt.Equal(effectsNow))
			require.Equal(t, "crm reports deal_1 deleted (event evt_7).", got.LastError)
			require.Zero(t, got.LastHTTPCode)
			require.Equal(t, "crm · deleted remotely: re-create after confirming", got.ErrorGroup)
		}
	})
}

// The objects a link gave up are its own, each kept once however often it
// is reported deleted, and none is kept for an event that named no id.
func TestMarkRemoteDeletedKeepsTheObjectsTheLinkGaveUp(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		l := effectLink(t, db, "1", "crm", models.StatusSuccess)
		other := effectLink(t, db, "2", "crm", models.StatusSuccess)
		for _, object := range []string{"deal_1", "deal_1", "deal_9", ""} {
			marked, err := models.MarkRemoteDeleted(db, l.ID, "crm", object, "crm reports "+object+" deleted.", effectsNow)
			require.NoError(t, err, "object %q", object)
			require.True(t, marked, "object %q", object)
		}
		for object, want := range map[string]bool{"deal_1": true, "deal_9": true, "deal_2": false, "": false} {
			gone, err := models.DeletedObject(db, l.ID, object)
			require.NoError(t, err)
			require.Equal(t, want, gone, "object %q of link 1", object)
		}
		gone, err := models.DeletedObject(db, other.ID, "deal_1")
		require.NoError(t, err)
		require.False(t, gone, "another link gave deal_1 up")
	})
}

// An unknown object is adopted once: a second delivery neither adds a
// record nor overwrites the one there, and a link already there is kept.
func TestAdoptRemoteObjectOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		created, err := models.AdoptRemoteObject(db, "crm_contact", "c_1", "crm", `{"id":"c_1","name":"Ana"}`, "h1", effectsNow)
		require.NoError(t, err)
		require.True(t, created)
		rec, err := models.RecordByKey(db, "crm_contact", "c_1")
		require.NoError(t, err)
		require.Equal(t, `{"id":"c_1","name":"Ana"}`, rec.Payload)
		links, err := models.RecordLinks(db, "crm_contact", "c_1")
		require.NoError(t, err)
		require.Len(t, links, 1)
		l := links[0]
		require.Equal(t, []string{"crm", "c_1", "c_1", "h1"}, []string{l.ExternalService, l.ExternalKey, l.ExternalID, l.PushedHash})
		require.Equal(t, models.StatusSuccess, l.Status)

		// Again, with other content and the link since sent elsewhere.
		require.NoError(t, db.Model(&l).Updates(map[string]any{"status": models.StatusRetry, "external_id": "c_1b"}).Error)
		created, err = models.AdoptRemoteObject(db, "crm_contact", "c_1", "crm", `{"id":"c_1","name":"Bea"}`, "h2", effectsNow)
		require.NoError(t, err)
		require.False(t, created, "the record exists")
		rec, err = models.RecordByKey(db, "crm_contact", "c_1")
		require.NoError(t, err)
		require.Equal(t, "h1", rec.ContentHash, "the record is not overwritten")
		links, err = models.RecordLinks(db, "crm_contact", "c_1")
		require.NoError(t, err)
		require.Len(t, links, 1)
		require.Equal(t, models.StatusRetry, links[0].Status, "the link is not overwritten")
		require.Equal(t, "c_1b", links[0].ExternalID)
	})
}

// Deliveries of the same new object at once adopt it exactly once: the
// unique keys decide, not a SELECT before the insert.
func TestAdoptRemoteObjectConcurrently(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		const deliveries = 24
		var wg sync.WaitGroup
		created := make(chan bool, deliveries)
		errs := make(chan error, deliveries)
		for i := range deliveries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- db.Transaction(func(tx *gorm.DB) error {
					c, err := models.AdoptRemoteObject(tx, "crm_contact", "c_9", "crm",
						fmt.Sprintf(`{"id":"c_9","n":%d}`, i), fmt.Sprintf("h%d", i), effectsNow)
					created <- c && err == nil
					return err
				})
			}()
		}
		wg.Wait()
		close(created)
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		n := 0
		for c := range created {
			if c {
				n++
			}
		}
		require.Equal(t, 1, n, "exactly one delivery creates the record")
		var records, links int64
		require.NoError(t, db.Model(&models.Record{}).Where("local_type = ? AND local_id = ?", "crm_contact", "c_9").Count(&records).Error)
		require.NoError(t, db.Model(&models.Link{}).Where("local_type = ? AND local_id = ?", "crm_contact", "c_9").Count(&links).Error)
		require.Equal(t, [2]int64{1, 1}, [2]int64{records, links}, "one record and one link")
	})
}

// A payment event gives a link that lost its create's answer the
// provider's id, in success only when the provider holds what the record
// does, and no longer marked as after a delete whose outcome is unknown; a
// link in success takes the record's new hash; a link being sent is left to
// its worker.
func TestAdoptProviderState(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, tc := range []struct {
			name           string
			read, status   models.Status // as the effect read it, as it is when the update runs
			externalID     string        // the link's, before
			held, record   string
			want           models.Status
			wantID, pushed string
			attempts       int
		}{
			{"no id, the provider holds the record", models.StatusRetry, models.StatusRetry, "", "h-new", "h-new", models.StatusSuccess, "pay_1", "h-new", 0},
			{"no id, the record changed since the create", models.StatusRetry, models.StatusRetry, "", "h-create", "h-new", models.StatusNew, "pay_1", "h-create", 0},
			{"no id, claimed since it was read", models.StatusRetry, models.StatusProcessing, "", "h-new", "h-new", models.StatusProcessing, "", "h-before", 2},
			{"in success", models.StatusSuccess, models.StatusSuccess, "pay_1", "", "h-new", models.StatusSuccess, "pay_1", "h-new", 2},
			{"in success, claimed since it was read", models.StatusSuccess, models.StatusProcessing, "pay_1", "", "h-new", models.StatusProcessing, "pay_1", "h-before", 2},
			{"retrying, with an id", models.StatusRetry, models.StatusRetry, "pay_1", "", "h-new", models.StatusRetry, "pay_1", "h-before", 2},
		} {
			// DeleteUnknown as after a delete of ours with its answer lost,
			// then a create whose answer was lost too (the sender's recreate).
			l := effectLink(t, db, tc.name, "payments", tc.status, func(l *models.Link) {
				l.ExternalID, l.NeedsLookup, l.DeleteUnknown = tc.externalID, true, true
			})
			l.Status = tc.read
			require.NoError(t, models.AdoptProviderState(db, &l, "pay_1", tc.held, tc.record, effectsNow), tc.name)
			got, err := models.LinkByID(db, l.ID)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Status, tc.name)
			require.Equal(t, tc.wantID, got.ExternalID, tc.name)
			require.Equal(t, tc.pushed, got.PushedHash, tc.name)
			require.Equal(t, tc.attempts, got.Attempts, tc.name)
			if tc.status == models.StatusProcessing {
				require.True(t, got.UpdatedAt.Equal(effectsBefore), "%s: a link being sent is not written", tc.name)
				continue
			}
			require.True(t, got.UpdatedAt.Equal(effectsNow), tc.name)
			if tc.externalID == "" { // adopted: the create is over
				require.False(t, got.NeedsLookup, tc.name)
				// The object adopted is the create's, made after that delete:
				// should it go missing, somebody else deleted it.
				require.False(t, got.DeleteUnknown, tc.name)
				require.Empty(t, got.CreatePayload, tc.name)
				require.Empty(t, got.LastError, tc.name)
				require.True(t, got.NextAttemptAt.Equal(effectsNow), tc.name)
			} else {
				require.True(t, got.NeedsLookup, tc.name)
				require.True(t, got.DeleteUnknown, tc.name)
				require.Equal(t, "before", got.LastError, tc.name)
			}
		}
	})
}

// A record changed by one service's webhook is pushed again, with fresh
// attempts, to its other services in success or failed; a link queued or
// retrying keeps its attempts, one being sent is left to its worker, and
// the service that told us and other records are not touched.
func TestRequeueOtherLinks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		requeued := map[int64]bool{}
		var left []models.Link
		for _, status := range models.Statuses {
			l := effectLink(t, db, "1", "svc_"+string(status), status)
			if status == models.StatusSuccess || status == models.StatusFailed {
				requeued[l.ID] = true
			} else {
				left = append(left, l)
			}
		}
		left = append(left, effectLink(t, db, "1", "payments", models.StatusSuccess), // the one that told us
			effectLink(t, db, "2", "crm", models.StatusSuccess)) // another record
		require.NoError(t, models.RequeueOtherLinks(db, "order", "1", "payments", effectsNow))
		for id := range requeued {
			got, err := models.LinkByID(db, id)
			require.NoError(t, err)
			require.Equal(t, models.StatusNew, got.Status, got.ExternalService)
			require.Zero(t, got.Attempts, got.ExternalService)
			require.True(t, got.NextAttemptAt.Equal(effectsNow), got.ExternalService)
			require.True(t, got.UpdatedAt.Equal(effectsNow), got.ExternalService)
		}
		for _, l := range left {
			requireUntouched(t, db, l)
		}
	})
}

// The joined read finds what LinkByExternal and LockRecord find, in every
// case an effect meets: by id, by key, a link whose record is gone, a link
// by id without a record beside another carrying the key, and none.
func TestLinkedRecordByExternalReadsWhatTheTwoReadsRead(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		deleted := effectsBefore.Add(time.Minute)
		for _, id := range []string{"1", "2", "4"} {
			rec := models.Record{LocalType: "order", LocalID: id, Payload: `{"n":` + id + `}`, ContentHash: "h" + id,
				CreatedAt: effectsBefore, UpdatedAt: effectsNow, DeletedAt: &deleted}
			require.NoError(t, db.Create(&rec).Error)
		}
		effectLink(t, db, "1", "crm", models.StatusSuccess)
		effectLink(t, db, "2", "crm", models.StatusRetry, func(l *models.Link) { l.ExternalID = "" })
		effectLink(t, db, "3", "crm", models.StatusSuccess) // its record is gone
		effectLink(t, db, "4", "crm", models.StatusSuccess, func(l *models.Link) { l.ExternalID, l.ExternalKey = "", "site_order_3" })
		for _, c := range []struct{ name, id, key string }{
			{"by id", "deal_1", "site_order_1"},
			{"by id alone", "deal_1", ""},
			{"by key, the link has no id", "deal_new", "site_order_2"},
			{"by key alone", "", "site_order_2"},
			{"a link by id without its record wins over one by key", "deal_3", "site_order_3"},
			{"by key, whose link has no record", "", "site_order_3"},
			{"none", "deal_9", "site_order_9"},
			{"nothing asked", "", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				wantLink, wantErr := models.LinkByExternal(db, "crm", c.id, c.key)
				lr, err := models.LinkedRecordByExternal(db, "crm", c.id, c.key)
				link, rec := lr.Link, lr.Record
				if wantErr != nil {
					require.ErrorIs(t, err, models.ErrNotFound)
					require.ErrorIs(t, wantErr, models.ErrNotFound)
					return
				}
				require.NoError(t, err)
				require.Equal(t, wantLink.ID, link.ID)
				require.Equal(t, *wantLink, *link)
				wantRec, err := models.LockRecord(db, link.LocalType, link.LocalID)
				if errors.Is(err, models.ErrNotFound) {
					require.Nil(t, rec, "the link of %s has no record", link.LocalID)
					return
				}
				require.NoError(t, err)
				require.NotNil(t, rec)
				require.Equal(t, wantRec.ID, rec.ID)
				require.True(t, wantRec.UpdatedAt.Equal(rec.UpdatedAt) && wantRec.CreatedAt.Equal(rec.CreatedAt) && wantRec.DeletedAt.Equal(*rec.DeletedAt))
				wantRec.CreatedAt, wantRec.UpdatedAt, wantRec.DeletedAt = rec.CreatedAt, rec.UpdatedAt, rec.DeletedAt
				require.Equal(t, *wantRec, *rec, "every column of the record is read")
			})
		}
	})
}

// On Postgres the joined read locks the record, as LockRecord does, until
// the transaction ends: a concurrent effect on the same record waits.
func TestLinkedRecordByExternalLocksTheRecord(t *testing.T) {
	db := dbtest.Postgres(t)
	rec := models.Record{LocalType: "order", LocalID: "1", Payload: `{}`, ContentHash: "h", CreatedAt: effectsNow, UpdatedAt: effectsNow}
	require.NoError(t, db.Create(&rec).Error)
	effectLink(t, db, "1", "crm", models.StatusSuccess)
	tx := db.Begin()
	defer tx.Rollback()
	lr, err := models.LinkedRecordByExternal(tx, "crm", "deal_1", "")
	require.NoError(t, err)
	require.Equal(t, rec.ID, lr.Record.ID)
	err = db.Exec("SELECT id FROM records WHERE id = ? FOR UPDATE NOWAIT", rec.ID).Error
	require.ErrorContains(t, err, "could not obtain lock", "the record is locked while the effect's transaction lasts")
}

// A record linked to one service alone owes no other service a push when
// its provider moves it; one linked to more owes each in success or failed
// one, as RequeueOtherLinks writes.
func TestRecordMovedByProviderRequeuesTheOtherServicesOnly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, id := range []string{"1", "2"} {
			require.NoError(t, db.Create(&models.Record{LocalType: "order", LocalID: id, Payload: `{}`, ContentHash: "h",
				CreatedAt: effectsNow, UpdatedAt: effectsNow}).Error)
		}
		effectLink(t, db, "1", "stripe", models.StatusSuccess)
		effectLink(t, db, "2", "stripe", models.StatusSuccess)
		crm := effectLink(t, db, "2", "crm", models.StatusSuccess, func(l *models.Link) { l.ExternalID = "crm_2" })
		erp := effectLink(t, db, "2", "erp", models.StatusRetry, func(l *models.Link) { l.ExternalID = "erp_2" })

		alone, err := models.LinkedRecordByExternal(db, "stripe", "deal_1", "")
		require.NoError(t, err)
		require.True(t, alone.Alone, "order/1 is linked to stripe alone")
		shared, err := models.LinkedRecordByExternal(db, "stripe", "deal_2", "")
		require.NoError(t, err)
		require.False(t, shared.Alone, "order/2 is linked to the CRM and the ERP too")

		for _, lr := range []models.LinkedRecord{alone, shared} {
			require.NoError(t, models.RecordMovedByProvider(db, lr, lr.Link.ExternalID, "", "h-after", effectsNow))
			got, err := models.LinkByID(db, lr.Link.ID)
			require.NoError(t, err)
			require.Equal(t, "h-after", got.PushedHash, "the provider's link learns what it holds")
			require.Equal(t, models.StatusSuccess, got.Status)
		}
		got, err := models.LinkByID(db, crm.ID)
		require.NoError(t, err)
		require.Equal(t, models.StatusNew, got.Status, "the CRM is owed order/2's new state")
		require.Zero(t, got.Attempts)
		requireUntouched(t, db, erp) // already queued: keeps its turn and its attempts
	})
}

// A link that lost its create's answer adopts the provider's id from a
// webhook; when the record was deleted meanwhile, the link is queued, so
// that the delete of the object it now names is sent, even though the
// provider holds what the create sent. README: "a record deleted … while a
// link is being sent is sent again when that send ends, as what the record
// now wants".
func TestAnAdoptedObjectOfADeletedRecordIsDeleted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, deleted := range []bool{false, true} {
			id := fmt.Sprint(deleted)
			rec := models.Record{LocalType: "order", LocalID: id, Payload: `{"status":"paid"}`, ContentHash: "h-paid",
				CreatedAt: effectsNow, UpdatedAt: effectsNow}
			if deleted {
				rec.DeletedAt = &effectsBefore
			}
			require.NoError(t, db.Create(&rec).Error)
			l := effectLink(t, db, id, "payments", models.StatusRetry, func(l *models.Link) { l.ExternalID, l.NeedsLookup = "", true })
			lr, err := models.LinkedRecordByExternal(db, "payments", "", l.ExternalKey)
			require.NoError(t, err)
			// The provider holds the create's body moved to paid: what the record holds.
			require.NoError(t, models.RecordMovedByProvider(db, lr, "pay_"+id, "h-paid", "h-paid", effectsNow))
			got, err := models.LinkByID(db, l.ID)
			require.NoError(t, err)
			require.Equal(t, "pay_"+id, got.ExternalID, "the link names the object either way")
			if deleted {
				require.Equal(t, models.StatusNew, got.Status, "the delete is still owed")
			} else {
				require.Equal(t, models.StatusSuccess, got.Status)
			}
		}
	})
}

// An operator's Re-create gives up the object the link names, in the same
// transaction: a link marked deleted before given-up objects were kept
// (migration 0034), or whose object was adopted since its mark, has none
// kept for it yet.
func TestRecreateGivesUpTheObjectItForgets(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		l := effectLink(t, db, "1", "crm", models.StatusFailed, func(l *models.Link) { l.RemoteDeletedAt = &effectsNow })
		got, err := models.Recreate(db, l.ID, effectsNow)
		require.NoError(t, err)
		require.Empty(t, got.ExternalID)
		require.Equal(t, models.StatusNew, got.Status)
		gone, err := models.DeletedObject(db, l.ID, l.ExternalID)
		require.NoError(t, err)
		require.True(t, gone, "%s is kept as an object the link gave up", l.ExternalID)
	})
}
