package inbox

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Providers do not promise delivery order, and a delivery that got a 5xx is
// re-sent later: a refund may arrive before the payment it refunds. An
// event moves the payment forward, to its own state, whatever steps it
// skips; one at or behind the current state is old news.
func TestPaymentEventsArriveInAnyOrder(t *testing.T) {
	type step struct{ event, outcome, status, note string }
	cases := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{
			{"payment.succeeded", models.EventApplied, "paid", "went from pending to paid"},
			{"payment.refunded", models.EventApplied, "refunded", "went from paid to refunded"},
		}},
		{"the refund first", []step{
			{"payment.refunded", models.EventApplied, "refunded", "went from pending to refunded"},
			{"payment.succeeded", models.EventIgnored, "refunded", `is already "refunded", which comes after "paid"`},
		}},
		{"the same news twice", []step{
			{"payment.succeeded", models.EventApplied, "paid", ""},
			{"payment.succeeded", models.EventIgnored, "paid", `is already "paid"`},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				e := setup(t, db)
				e.payment("1")
				for i, s := range c.steps {
					res, err := e.deliver("payments", paymentEvent("evt_"+string(rune('a'+i)), s.event, "1"))
					require.NoError(t, err)
					require.Equal(t, s.outcome, res.Outcome, "%s: %s", s.event, res.Note)
					require.Contains(t, res.Note, s.note)
					require.Equal(t, s.status, e.status("1"), "after %s", s.event)
				}
				l, err := models.LinkByExternal(db, "payments", "pay_1", "")
				require.NoError(t, err)
				rec, err := models.RecordByKey(db, "order", "1")
				require.NoError(t, err)
				require.Equal(t, rec.ContentHash, l.PushedHash, "the provider holds the state it reported: nothing to push back")
			})
		})
	}
}

// A payment in a state the transitions do not rank cannot be placed before
// or after the event's: an operator looks, rather than a silent "ignored".
func TestPaymentInAnUnknownStateIsShownToAnOperator(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		payload, hash, err := models.CanonicalPayload([]byte(`{"amount":1000,"currency":"EUR","status":"disputed"}`))
		require.NoError(t, err)
		require.NoError(t, db.Model(&models.Record{}).Where("local_id = ?", "1").
			Updates(map[string]any{"payload": payload, "content_hash": hash}).Error)
		res, err := e.deliver("payments", paymentEvent("evt_a", "payment.refunded", "1"))
		require.NoError(t, err)
		require.Equal(t, models.EventFailed, res.Outcome)
		require.Contains(t, res.Note, `"disputed"`)
		require.Equal(t, "disputed", e.status("1"))
	})
}

// crmOrder seeds order id with a link to the CRM's externalID ("" for a
// link whose create's answer was lost) under the key site_order_<id>.
func (e *env) crmOrder(id, externalID string) {
	now := e.clock.Now()
	payload, hash, err := models.CanonicalPayload([]byte(`{"title":"Order ` + id + `"}`))
	require.NoError(e.t, err)
	require.NoError(e.t, e.db.Create(&models.Record{LocalType: "order", LocalID: id, Payload: payload, ContentHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
	l := models.Link{LocalType: "order", LocalID: id, ExternalService: "crm", ExternalKey: "site_order_" + id,
		ExternalID: externalID, Status: models.StatusSuccess, NextAttemptAt: now, PushedHash: hash, CreatedAt: now, UpdatedAt: now}
	if externalID == "" {
		l.Status, l.PushedHash, l.NeedsLookup, l.Attempts, l.CreatePayload = models.StatusRetry, "", true, 1, payload
	}
	require.NoError(e.t, e.db.Create(&l).Error)
}

func (e *env) link(service, localID string) models.Link {
	var l models.Link
	require.NoError(e.t, e.db.Where("external_service = ? AND local_id = ?", service, localID).Take(&l).Error)
	return l
}

// Two objects can carry our key (reconciliation reports it as
// duplicate_remote). An event about the one the link does not point at —
// a person deleting the stray duplicate — must leave the link alone: marked
// deleted, it would be re-created as a third object.
func TestAnEventAboutAnotherObjectWithOurKeyLeavesTheLinkAlone(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crmOrder("1", "deal_B")
		before := e.link("crm", "1")
		for i, typ := range []string{"deal.deleted", "deal.updated"} {
			res, err := e.deliver("crm", `{"id":"m`+string(rune('a'+i))+`","type":"`+typ+`","data":{"id":"deal_A","external_key":"site_order_1","title":"Other"}}`)
			require.NoError(t, err)
			require.Equal(t, models.EventIgnored, res.Outcome, "%s: %s", typ, res.Note)
			require.Contains(t, res.Note, "points at deal_B")
			require.Equal(t, before, e.link("crm", "1"), "%s of deal_A changed the link to deal_B", typ)
		}

		e.payment("2")
		res, err := e.deliver("payments", `{"id":"evt_x","type":"payment.succeeded","data":{"object":{"id":"pay_other","external_key":"site_order_2"}}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, res.Note)
		require.Equal(t, "pending", e.status("2"), "a payment of another object moved ours")
	})
}

// The key is only a fallback: an event whose id names one link's object
// and whose key names another's is about the first.
func TestTheProvidersIDWinsOverOurKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crmOrder("1", "deal_1")
		e.crmOrder("2", "deal_2")
		res, err := e.deliver("crm", `{"id":"m1","type":"deal.deleted","data":{"id":"deal_2","external_key":"site_order_1"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		require.Nil(t, e.link("crm", "1").RemoteDeletedAt, "deal_1 was not deleted")
		require.NotNil(t, e.link("crm", "2").RemoteDeletedAt, "deal_2 was deleted")
	})
}

// A link that never learnt its object's id (the create's answer was lost)
// is still found by our key.
func TestALinkWithoutAnIDIsFoundByOurKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crmOrder("1", "")
		res, err := e.deliver("crm", `{"id":"m1","type":"deal.deleted","data":{"id":"deal_9","external_key":"site_order_1"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		l := e.link("crm", "1")
		require.NotNil(t, l.RemoteDeletedAt)
		require.Contains(t, l.LastError, "deal_9", "the message names the object deleted")

		// deal_9 is the object the link gives up, though it never held its id.
		res, err = e.deliver("crm", `{"id":"m2","type":"deal.updated","data":{"id":"deal_9","external_key":"site_order_1","title":"Old"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, res.Note)
		require.Equal(t, "about deal_9, which crm reported deleted or missing; order/1 waits for a person to re-create its object: nothing to do", res.Note)
		_, err = models.Recreate(db, l.ID, e.clock.Now())
		require.NoError(t, err)
		before := e.link("crm", "1")
		res, err = e.deliver("crm", `{"id":"m3","type":"deal.deleted","data":{"id":"deal_9","external_key":"site_order_1"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, res.Note)
		require.Equal(t, "about deal_9, which crm reported deleted or missing, and which is being re-created for order/1: nothing to do", res.Note)
		require.Equal(t, before, e.link("crm", "1"), "a late deletion of deal_9 marked the new create deleted")
	})
}

// A deletion that arrives while the link is being sent is refused (5xx, not
// recorded), so the provider delivers it again after the send: marking the
// link meanwhile would drop the send's outcome.
func TestADeletionWaitsForTheSendInFlight(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crmOrder("1", "deal_1")
		require.NoError(t, db.Model(&models.Link{}).Where("id = ?", e.link("crm", "1").ID).Update("status", models.StatusProcessing).Error)
		body := `{"id":"m1","type":"deal.deleted","data":{"id":"deal_1","external_key":"site_order_1"}}`
		_, err := e.deliver("crm", body)
		require.ErrorContains(t, err, "being sent right now")
		require.Nil(t, e.link("crm", "1").RemoteDeletedAt)
		var processed int64
		require.NoError(t, db.Model(&models.ProcessedEvent{}).Count(&processed).Error)
		require.Zero(t, processed, "rolled back, so that the provider's next delivery is not a duplicate")

		require.NoError(t, db.Model(&models.Link{}).Where("id = ?", e.link("crm", "1").ID).Update("status", models.StatusSuccess).Error)
		res, err := e.deliver("crm", body)
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		require.NotNil(t, e.link("crm", "1").RemoteDeletedAt)
	})
}

// A payment event adopts the provider's id on a link whose create's answer
// was lost. The provider holds the create's body, frozen at its first
// attempt: a change made to the record while the link waited is still to
// push, and only a record that has not changed is done.
func TestAdoptionByWebhookPushesWhatChangedSinceTheCreate(t *testing.T) {
	const frozen = `{"amount":1000,"currency":"EUR","status":"pending"}`
	cases := []struct {
		name, frozen, record string
		status               models.Status
	}{
		{"unchanged since the create", frozen, frozen, models.StatusSuccess},
		{"changed while the link waited", frozen, `{"amount":1200,"currency":"EUR","status":"pending"}`, models.StatusNew},
		{"no create body was frozen", "", frozen, models.StatusNew},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				e := setup(t, db)
				now := e.clock.Now()
				payload, hash, err := models.CanonicalPayload([]byte(c.record))
				require.NoError(t, err)
				require.NoError(t, db.Create(&models.Record{LocalType: "order", LocalID: "1", Payload: payload, ContentHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
				require.NoError(t, db.Create(&models.Link{LocalType: "order", LocalID: "1", ExternalService: "payments", ExternalKey: "site_order_1",
					Status: models.StatusRetry, NeedsLookup: true, CreatePayload: c.frozen, Attempts: 1, LastError: "timeout",
					NextAttemptAt: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}).Error)

				res, err := e.deliver("payments", paymentEvent("evt_1", "payment.succeeded", "1"))
				require.NoError(t, err)
				require.Equal(t, models.EventApplied, res.Outcome, res.Note)
				l := e.link("payments", "1")
				rec, err := models.RecordByKey(db, "order", "1")
				require.NoError(t, err)
				require.Equal(t, "pay_1", l.ExternalID)
				require.Equal(t, c.status, l.Status, "record %s, frozen create body %q", rec.Payload, c.frozen)
				require.False(t, l.NeedsLookup)
				require.Empty(t, l.CreatePayload)
				require.Zero(t, l.Attempts)
				if c.status == models.StatusSuccess {
					require.Equal(t, rec.ContentHash, l.PushedHash)
					return
				}
				require.NotEqual(t, rec.ContentHash, l.PushedHash, "the provider does not hold the record")
				require.False(t, l.NextAttemptAt.After(now), "the push of the record is due now, not at the create's retry")
			})
		})
	}
}

// setupCRM is setup with the CRM configured as svc.
func setupCRM(t *testing.T, db *gorm.DB, svc config.Service) *env {
	e := setup(t, db)
	svc.Webhook = &config.Webhook{Scheme: "stripe", Secrets: []string{paySecret}, Effects: config.EffectSet("crm")}
	rc, err := New(db, map[string]config.Service{"crm": svc}, e.clock, slog.New(slog.DiscardHandler), redact.New(nil))
	require.NoError(t, err)
	e.rc = rc
	return e
}

// seedDeal stores order 1 with payload and a successful link to deal_1.
func (e *env) seedDeal(payload string) {
	now := e.clock.Now()
	body, hash, err := models.CanonicalPayload([]byte(payload))
	require.NoError(e.t, err)
	require.NoError(e.t, e.db.Create(&models.Record{LocalType: "order", LocalID: "1", Payload: body, ContentHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
	require.NoError(e.t, e.db.Create(&models.Link{LocalType: "order", LocalID: "1", ExternalService: "crm", ExternalKey: "site_order_1",
		ExternalID: "deal_1", Status: models.StatusSuccess, NextAttemptAt: now, PushedHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
}

// Each of our pushes comes back as the CRM's own deal.updated. A field the
// CRM does not keep is missing from every one of them: were it a
// difference, each push would queue the next, without end.
func TestOurOwnPushesComingBackDoNotQueueAnother(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.seedDeal(`{"internal_note":"vip","title":"Order 1"}`)
		for i := range 5 {
			res, err := e.deliver("crm", fmt.Sprintf(`{"id":"msg_%d","type":"deal.updated","data":{"id":"deal_1","external_key":"site_order_1","title":"Order 1"}}`, i))
			require.NoError(t, err)
			require.Equal(t, models.EventIgnored, res.Outcome, "push %d came back and queued another: %s", i, res.Note)
			require.Contains(t, res.Note, "does not carry internal_note")
			require.Equal(t, models.StatusSuccess, e.link("crm", "1").Status)
		}
	})
}

// A service's reconcile.compare names the fields compared with the CRM's
// object; a deal.updated compares those and no others.
func TestDealUpdatedComparesTheConfiguredFields(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setupCRM(t, db, config.Service{Reconcile: config.Reconcile{Compare: map[string][]string{"order": {"total"}}}})
		e.seedDeal(`{"title":"Order 1","total":"10.00"}`)
		res, err := e.deliver("crm", `{"id":"m1","type":"deal.updated","data":{"id":"deal_1","title":"ORDER 1 (renamed in the CRM)","total":"10.00"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, "title is not compared: %s", res.Note)
		require.Equal(t, models.StatusSuccess, e.link("crm", "1").Status)

		res, err = e.deliver("crm", `{"id":"m2","type":"deal.updated","data":{"id":"deal_1","title":"Order 1","total":"99.00"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		require.Contains(t, res.Note, "differs from our desired state in total")
		require.Equal(t, models.StatusNew, e.link("crm", "1").Status)
	})
}

// A link waiting to retry already pushes our desired state at its next
// attempt, and a failed one waits for a person: a deal.updated queues
// neither again, and above all does not hand either fresh attempts.
func TestDealUpdatedLeavesAWaitingOrFailedLinkAsItIs(t *testing.T) {
	for _, status := range []models.Status{models.StatusRetry, models.StatusFailed, models.StatusNew} {
		t.Run(string(status), func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				e := setup(t, db)
				e.seedDeal(`{"title":"Order 1","total":"10.00"}`)
				require.NoError(t, db.Model(&models.Link{}).Where("local_id = ?", "1").Updates(map[string]any{"status": status,
					"attempts": 5, "next_attempt_at": e.clock.Now().Add(10 * time.Minute), "last_error": "HTTP 503"}).Error)
				before := e.link("crm", "1")
				res, err := e.deliver("crm", `{"id":"m1","type":"deal.updated","data":{"id":"deal_1","title":"Order 1","total":"99.00"}}`)
				require.NoError(t, err)
				require.Equal(t, models.EventIgnored, res.Outcome, res.Note)
				require.Contains(t, res.Note, "differs from our desired state in total")
				require.Equal(t, before, e.link("crm", "1"))
			})
		})
	}
}

// Our own delete comes back as the provider's deal.deleted: the link, done
// as deleted and without an id, is found by our key and must stay deleted,
// not become a failed link waiting for a person to re-create its object.
func TestTheProvidersDeletionOfAnObjectWeDeletedLeavesTheLinkDeleted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.crmOrder("1", "")
		require.NoError(t, db.Model(&models.Link{}).Where("id = ?", e.link("crm", "1").ID).Update("status", models.StatusDeleted).Error)
		res, err := e.deliver("crm", `{"id":"m1","type":"deal.deleted","data":{"id":"deal_1","external_key":"site_order_1"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, res.Note)
		l := e.link("crm", "1")
		require.Equal(t, models.StatusDeleted, l.Status)
		require.Nil(t, l.RemoteDeletedAt)
	})
}
