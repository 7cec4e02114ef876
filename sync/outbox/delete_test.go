package outbox

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// withDeletes gives the crm's orders a delete, and builds the engine anew.
func (e *env) withDeletes() {
	for i := range e.svcs {
		if e.svcs[i].Name != "crm" {
			continue
		}
		o := e.svcs[i].Config.Objects["order"]
		o.Delete = "DELETE /deals/{external_id}"
		e.svcs[i].Config.Objects = map[string]config.Object{"order": o}
		e.svcs[i].Conn = connector.NewHTTP("crm", e.svcs[i].Config, e.redactr, nil)
	}
	e.eng = e.engine(e.db, Options{Concurrency: 8})
}

// syncedOrder is an engine whose crm deletes orders, with order 1 synced.
func syncedOrder(t *testing.T, db *gorm.DB) *env {
	t.Helper()
	e := setup(t, db)
	e.withDeletes()
	e.upsert(order(1))
	e.settle(e.eng)
	return e
}

func (e *env) remove(typ, id string) Enqueued {
	e.t.Helper()
	res, err := e.eng.Delete(context.Background(), typ, id)
	require.NoError(e.t, err)
	return res
}

// claimLost claims order 1's link for a worker that then stops answering,
// checking that the claim hands out a delete, or a write, as deletes says.
func (e *env) claimLost(owner string, deletes bool) models.ClaimedLink {
	e.t.Helper()
	claimed, err := models.ClaimDue(e.db, owner, e.clock.Now(), time.Minute, 10, nil)
	require.NoError(e.t, err)
	require.Len(e.t, claimed, 1)
	require.Equal(e.t, deletes, claimed[0].LeaseDeletes, "whether the claim hands out a delete")
	return claimed[0]
}

// lostDelete deletes order 1 and has a worker claim its link, delete the
// object at the provider and stop answering before it writes the outcome;
// it returns the link as it was synced.
func (e *env) lostDelete() models.Link {
	e.t.Helper()
	first := e.link("order", "1", "crm")
	e.remove("order", "1")
	e.claimLost("stopped-worker/1", true)
	require.True(e.t, e.crm.Delete(first.ExternalID), "the stopped worker's delete reached the provider")
	return first
}

// deleteAnswerLost deletes order 1 and sends the delete, whose answer the
// CRM drops after it took effect; it returns the link as it was synced.
func (e *env) deleteAnswerLost() models.Link {
	e.t.Helper()
	first := e.link("order", "1", "crm")
	e.crm.Script(sandbox.DropAfterCommit())
	e.remove("order", "1")
	require.NoError(e.t, e.eng.Drain(context.Background()))
	return first
}

// rescueLost lets the lost send's lease run out and rescues its link.
func (e *env) rescueLost() {
	e.t.Helper()
	e.clock.Advance(2 * time.Minute)
	n, err := e.eng.Rescue(context.Background())
	require.NoError(e.t, err)
	require.Equal(e.t, 1, n)
}

// A delete whose worker stopped answering mid-send is rescued in words
// that say a delete, not an update, will be sent again; it then is.
func TestARescuedDeleteSaysTheDeleteIsSentAgain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		e.remove("order", "1")
		e.claimLost("stopped-worker/1", true)
		e.rescueLost()
		l := e.link("order", "1", "crm")
		require.Equal(t, "worker stopped-worker/1 stopped answering mid-send; the delete will be sent again", l.LastError)

		e.settle(e.eng)
		require.Zero(t, e.crm.CountByKey("site_order_1"))
		require.Equal(t, models.StatusDeleted, e.link("order", "1", "crm").Status)
	})
}

// An object the provider said was deleted, then the record deleted here:
// the link ends deleted without the provider's mark, and a write of the
// record afterwards creates a new object whose link is an ordinary one
// (webhooks and reconciliation treat a marked link as waiting for a
// person).
func TestADeleteClearsTheProvidersDeletedMark(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		l := e.link("order", "1", "crm")
		marked, err := models.MarkRemoteDeleted(db, l.ID, "crm", l.ExternalID, "the provider says the deal was deleted", e.clock.Now())
		require.NoError(t, err)
		require.True(t, marked)

		e.remove("order", "1")
		e.settle(e.eng)
		l = e.link("order", "1", "crm")
		require.Equal(t, models.StatusDeleted, l.Status, l.LastError)
		require.Nil(t, l.RemoteDeletedAt, "our delete is done: the provider's mark is spent")

		e.upsert(order(1))
		e.settle(e.eng)
		l = e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		require.NotEmpty(t, l.ExternalID)
		require.Nil(t, l.RemoteDeletedAt)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"))
	})
}

func TestDeleteRemovesTheObjectAndTheLinkSaysDeleted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"))

		res := e.remove("order", "1")
		require.True(t, res.Changed)
		require.Equal(t, models.StatusNew, res.Links[0].Status, "the delete is queued like an update")
		e.settle(e.eng)

		require.Zero(t, e.crm.CountByKey("site_order_1"), "the sandbox CRM no longer holds the object")
		l = e.link("order", "1", "crm")
		require.Equal(t, models.StatusDeleted, l.Status)
		require.Empty(t, l.ExternalID, "the link forgets the object the provider no longer holds")
		require.Empty(t, l.LastError)
		as := e.attempts(l.ID)
		last := as[len(as)-1]
		require.Equal(t, "deal.delete", last.Operation)
		require.Equal(t, 204, last.HTTPCode)
		require.Equal(t, models.OutcomeOK, last.Outcome)
		require.Contains(t, last.RequestExcerpt, "DELETE /deals/deal_1")

		again := e.remove("order", "1")
		require.False(t, again.Changed, "deleting a deleted record changes nothing")
		require.Equal(t, models.StatusDeleted, again.Links[0].Status)
		rec, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.NotNil(t, rec.DeletedAt)
	})
}

func TestADeleteWhoseAnswerIsLostIsRetriedAndItsRetrys404IsDone(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		e.crm.Script(sandbox.DropAfterCommit())
		e.remove("order", "1")
		e.settle(e.eng)

		require.Zero(t, e.crm.CountByKey("site_order_1"))
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusDeleted, l.Status)
		require.Empty(t, l.LastError, "no error stays on the link")
		as := e.attempts(l.ID)
		require.Len(t, as, 3, "create, the delete whose answer was lost, the delete again")
		require.Equal(t, "deal.delete", as[1].Operation)
		require.Equal(t, models.OutcomeAmbiguous, as[1].Outcome)
		require.Equal(t, "deal.delete", as[2].Operation)
		require.Equal(t, 404, as[2].HTTPCode)
		require.Equal(t, models.OutcomeOK, as[2].Outcome, "a 404 to a delete means done")
	})
}

func TestARecordWrittenAgainAfterItsDeleteIsCreatedAnewWithANewKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		// Payments replays an Idempotency-Key's first answer: the old key
		// would hand back the deleted object instead of creating one.
		for i := range e.svcs {
			if e.svcs[i].Name == "payments" {
				o := e.svcs[i].Config.Objects["payment"]
				o.Delete = "DELETE /payments/{external_id}"
				e.svcs[i].Config.Objects = map[string]config.Object{"payment": o}
				e.svcs[i].Conn = connector.NewHTTP("payments", e.svcs[i].Config, e.redactr, nil)
			}
		}
		e.eng = e.engine(db, Options{Concurrency: 8})
		typ, id, body := payment(1)
		e.upsert(typ, id, body)
		e.settle(e.eng)
		first := e.link(typ, id, "payments")
		e.remove(typ, id)
		e.settle(e.eng)
		require.Empty(t, e.pay.Objects())

		res := e.upsert(typ, id, body)
		require.True(t, res.Changed, "the same payload again brings a deleted record back")
		e.settle(e.eng)
		l := e.link(typ, id, "payments")
		require.Equal(t, models.StatusSuccess, l.Status)
		require.NotEmpty(t, l.ExternalID)
		require.NotEqual(t, first.ExternalID, l.ExternalID, "a second object, created anew")
		require.NotEqual(t, first.IdempotencyKey, l.IdempotencyKey)
		require.Equal(t, first.IdempotencyKey+"-g2", l.IdempotencyKey)
		require.Len(t, e.pay.Objects(), 1)
		rec, err := models.RecordByKey(db, typ, id)
		require.NoError(t, err)
		require.Nil(t, rec.DeletedAt, "written again, the record lives")
		as := e.attempts(l.ID)
		require.Equal(t, l.IdempotencyKey, as[len(as)-1].IdempotencyKey, "the create carried the new key")
	})
}

func TestADeleteOfAServiceWithoutOneFailsTheLinkSayingSo(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		typ, id, body := payment(1)
		e.upsert(typ, id, body)
		e.settle(e.eng)
		e.remove(typ, id)
		e.settle(e.eng)
		l := e.link(typ, id, "payments")
		require.Equal(t, models.StatusFailed, l.Status)
		require.Equal(t, "payments has no delete operation for payment: the object stays at the provider", l.LastError)
		require.Len(t, e.pay.Objects(), 1)
	})
}

func TestADeleteBeforeAnySendCallsNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.withDeletes()
		e.upsert(order(1))
		e.remove("order", "1")
		e.settle(e.eng)
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusDeleted, l.Status)
		require.Empty(t, e.attempts(l.ID), "never created: nothing to call")
		require.Zero(t, e.crm.Requests().Total)
	})
}

func TestADeleteOfNoRecordIsNotFound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		_, err := e.eng.Delete(context.Background(), "order", "404")
		require.True(t, errors.Is(err, models.ErrNotFound), "got %v", err)
		require.Equal(t, "there is no record order/404 to delete: not found", err.Error())
		res, err := e.eng.UpsertBatch(context.Background(), []Incoming{{Type: "order", ID: "a/b", Delete: true}})
		require.NoError(t, err)
		require.Error(t, res[0].Refused, "a bad key is refused as for a write")
	})
}

// A delete whose answer was lost took effect; the record is written again
// before the delete's retry. The update finds no object, and the record is
// created anew (looked up by key first, with the next idempotency key), not
// failed for a 404.
func TestARecordWrittenAgainAfterADeleteWhoseAnswerWasLostIsCreatedAnew(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		first := e.deleteAnswerLost()
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusRetry, l.Status, "the delete's outcome is unknown")
		require.Zero(t, e.crm.CountByKey("site_order_1"), "but it took effect")

		_, _, body := order(1)
		require.True(t, e.upsert("order", "1", body).Changed)
		e.settle(e.eng)
		l = e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"))
		require.NotEqual(t, first.ExternalID, l.ExternalID)
		require.Equal(t, first.IdempotencyKey+"-g2", l.IdempotencyKey)
		var ops []string
		for _, a := range e.attempts(l.ID) {
			ops = append(ops, a.Operation)
		}
		require.Equal(t, []string{"deal.create", "deal.delete", "deal.update", "deal.lookup", "deal.create"}, ops)
	})
}

// recreateAnswerLost loses a delete's answer (it took effect), writes the
// record again, and sends it: the update finds no object, the lookup none,
// and the create's answer is lost too (the update and the create are the
// mutating calls). It returns the link before the delete and after.
func (e *env) recreateAnswerLost() (first, l models.Link) {
	e.t.Helper()
	first = e.deleteAnswerLost()
	require.Zero(e.t, e.crm.CountByKey("site_order_1"), "the lost delete took effect")
	e.crm.Script(sandbox.None(), sandbox.DropAfterCommit())
	_, _, body := order(1)
	require.True(e.t, e.upsert("order", "1", body).Changed)
	e.clock.Advance(16 * time.Minute) // past the lost delete's backoff
	require.NoError(e.t, e.eng.Drain(context.Background()))
	l = e.link("order", "1", "crm")
	require.Equal(e.t, models.StatusRetry, l.Status, "the create's outcome is unknown")
	require.Equal(e.t, 1, e.crm.CountByKey("site_order_1"), "but it took effect")
	return first, l
}

// The object a lost delete removed is created anew, and that create's answer
// is lost too; then the record is deleted again. The link must not go on
// naming the object the delete removed: its delete would find that one
// gone and end the link deleted, leaving the new object at the provider.
// (Found by TestDeletesAndWritesRacingTheEngineEndInTheRecordsLastState.)
func TestARecreateWhoseAnswerWasLostIsDeletedWithItsRecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		first, l := e.recreateAnswerLost()
		require.NotEqual(t, first.ExternalID, l.ExternalID, "the link does not name the object that is gone")

		objs := e.crm.Objects()
		require.Len(t, objs, 1)
		made := fmt.Sprint(objs[0]["id"])

		e.remove("order", "1")
		e.settle(e.eng)
		require.Equal(t, models.StatusDeleted, e.link("order", "1", "crm").Status)
		require.Zero(t, e.crm.CountByKey("site_order_1"), "the object the lost create made is deleted with its record")
		// Found by the lookup, not named on the link: a late webhook about
		// it carries our key, and must not find the link (models.DeletedObject).
		gone, err := models.DeletedObject(db, l.ID, made)
		require.NoError(t, err)
		require.True(t, gone, "%s, which our delete removed, is kept as an object the link gave up", made)
	})
}

// The update that found no object after a lost delete gives that object up
// with the send's finish, whether the create that follows answers or its
// answer is lost: a late webhook about it, which carries our key, must not
// find the link waiting for an id (models.DeletedObject, which the inbox
// asks).
func TestARecreateAfterAnUpdates404GivesTheOldObjectUp(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		first, l := e.recreateAnswerLost()
		require.Empty(t, l.ExternalID, "the create's answer was lost")
		gone, err := models.DeletedObject(db, l.ID, first.ExternalID)
		require.NoError(t, err)
		require.True(t, gone, "%s, which the update found gone, is kept as an object the link gave up", first.ExternalID)
	})
}

// The object a lost delete removed is created anew, that create's answer is
// lost, and the record is written again before the next attempt. The lookup
// finds the object the create made, which holds the create's body, not the
// record's new state: the link adopts it as that, and the new state goes
// as an update. (The create's body was frozen for nothing before: the next
// claim froze the record's new state, and the adopted object was taken
// for it.)
func TestARecreateWhoseAnswerWasLostAdoptsWhatItSent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		e.recreateAnswerLost()
		require.True(t, e.upsert("order", "1", `{"title":"Order 1","total":"99.00"}`).Changed)
		e.settle(e.eng)
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"))
		require.Equal(t, "99.00", e.crm.Objects()[0]["total"], "the provider holds the record's last state")
		rec, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.Equal(t, rec.ContentHash, l.PushedHash)
	})
}

// An update whose answer was lost, then the object deleted at the provider
// by somebody else: the next update's 404 is not taken for a delete of ours.
// Nothing is created behind the person's back; the link fails for them to
// decide (Re-create, on its page).
func TestAnUpdateFindingNoObjectAfterALostUpdateFailsAndCreatesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		first := e.link("order", "1", "crm")
		e.crm.Script(sandbox.DropAfterCommit())
		e.upsert("order", "1", `{"title":"Order 1","total":"12.00"}`)
		require.NoError(t, e.eng.Drain(context.Background()))
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusRetry, l.Status, "the update's outcome is unknown")
		require.True(t, l.NeedsLookup)
		require.False(t, l.DeleteUnknown, "an update is not a delete")

		require.True(t, e.crm.Delete(first.ExternalID), "somebody deletes the object at the provider")
		e.upsert("order", "1", `{"title":"Order 1","total":"13.00"}`)
		e.settle(e.eng)
		l = e.link("order", "1", "crm")
		require.Equal(t, models.StatusFailed, l.Status, l.LastError)
		require.Equal(t, 404, l.LastHTTPCode)
		require.Zero(t, e.crm.CountByKey("site_order_1"), "nothing was created")
		var ops []string
		for _, a := range e.attempts(l.ID) {
			ops = append(ops, a.Operation)
		}
		require.Equal(t, []string{"deal.create", "deal.update", "deal.update"}, ops)
	})
}

// A worker stops answering mid-delete, after its delete reached the
// provider; the record is written again before the rescued delete is sent.
// The update finds no object, and the record is created anew: the rescue
// remembers that a delete of ours may have taken effect.
func TestARecordWrittenAgainAfterARescuedDeleteIsCreatedAnew(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		first := e.lostDelete()
		e.rescueLost()
		require.True(t, e.link("order", "1", "crm").DeleteUnknown)

		_, _, body := order(1)
		require.True(t, e.upsert("order", "1", body).Changed)
		e.settle(e.eng)
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		require.False(t, l.DeleteUnknown)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"))
		require.Equal(t, first.IdempotencyKey+"-g2", l.IdempotencyKey)
	})
}

// A rescue hands a link back by what its lost send was, not by what its
// record is by the time of the rescue: a delete whose worker stopped, its
// record written again before the lease ran out, may still have removed the
// object (so the write's update that finds none creates it anew); a write
// whose worker stopped, its record deleted since, sent no delete.
func TestARescueKnowsTheLostSendByItsClaimNotByTheRecordNow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		e.lostDelete()
		_, _, body := order(1)
		require.True(t, e.upsert("order", "1", body).Changed, "the record is written again while the delete is lost")
		e.rescueLost()
		require.True(t, e.link("order", "1", "crm").DeleteUnknown, "the lost send was a delete")
		require.False(t, e.link("order", "1", "crm").LeaseDeletes, "the release forgets what the lease sent")
		e.settle(e.eng)
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"), "created anew")

		// The other way: a write lost, its record deleted before the rescue.
		_, _, body = order(2)
		require.True(t, e.upsert("order", "1", body).Changed)
		e.claimLost("stopped-worker/2", false)
		e.remove("order", "1")
		e.rescueLost()
		require.False(t, e.link("order", "1", "crm").DeleteUnknown, "no delete was sent")
	})
}

// A finish forgets what its lease was sending, so that a claim by a worker
// of an earlier version, which does not set it, leaves no rescuer reading
// an old send's.
func TestAFinishForgetsWhatItsLeaseWasSending(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := syncedOrder(t, db)
		e.remove("order", "1")
		claimed := e.claimLost("worker/1", true)
		require.True(t, e.link("order", "1", "crm").LeaseDeletes)
		j := job{link: claimed.Link}
		_, err := models.FinishLinks(db, []models.LinkOutcome{handBack(j, e.clock.Now())}, e.clock.Now())
		require.NoError(t, err)
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusNew, l.Status, "handed back as it was")
		require.False(t, l.LeaseDeletes)
	})
}
