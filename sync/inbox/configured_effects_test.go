package inbox

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// shop is a Stripe-signed service whose effects are the table given, with
// the webhook paths every test here shares.
func shop(t *testing.T, db *gorm.DB, table map[string]config.Effect) *env {
	e := setup(t, db)
	w := &config.Webhook{Scheme: "stripe", Secrets: []string{paySecret}, States: []string{"pending", "paid"},
		Paths:   config.EventPaths{ID: ".data.object.id", Key: ".data.object.metadata.key", OccurredAt: ".created"},
		Effects: config.Effects{Table: table}}
	rc, err := New(db, map[string]config.Service{"payments": {Webhook: w}}, e.clock, slog.New(slog.DiscardHandler), redact.New(nil))
	require.NoError(t, err)
	e.rc = rc
	return e
}

func shopEvent(evt, typ, object string, created int64) string {
	return `{"id":"` + evt + `","type":"` + typ + `","created":` + strconv.FormatInt(created, 10) + `,"data":{"object":` + object + `}}`
}

// mark_deleted: recreate marks the link and queues a new create at once,
// with a new idempotency key; leave waits for a person.
func TestMarkDeletedThenRecreate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := shop(t, db, map[string]config.Effect{"customer.deleted": {MarkDeleted: config.DeletedRecreate}})
		e.payment("1")
		before := e.link("payments", "1")
		res, err := e.deliver("payments", shopEvent("evt_del", "customer.deleted", `{"id":"pay_1"}`, e.clock.Now().Unix()))
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		require.Contains(t, res.Note, "a new one is being created")
		l := e.link("payments", "1")
		require.Equal(t, models.StatusNew, l.Status)
		require.Empty(t, l.ExternalID, "the next send is a create")
		require.Nil(t, l.RemoteDeletedAt)
		require.NotEqual(t, before.IdempotencyKey, l.IdempotencyKey, "a new key: the old one would replay the deleted object")
	})
}

// givenUpEffects are the effects of every kind, for the late events about
// an object a link gave up.
var givenUpEffects = map[string]config.Effect{
	"customer.deleted":  {MarkDeleted: config.DeletedRecreate},
	"customer.created":  {Adopt: true},
	"customer.updated":  {UpdateFields: config.Body{Fields: map[string]string{"amount": ".data.object.amount"}}},
	"customer.checked":  {KeepOurs: true},
	"payment.succeeded": {SetState: "paid"},
}

// lateEventsChangeNothing delivers an event of each type of givenUpEffects
// about pay_1, an object order/1's link gave up, carrying our key, and
// checks that each is stored as ignored with want as its note, and changes
// neither the link nor the record.
func (e *env) lateEventsChangeNothing(stage, want string) {
	t := e.t
	t.Helper()
	before := e.link("payments", "1")
	rec, err := models.RecordByKey(e.db, "order", "1")
	require.NoError(t, err)
	for _, typ := range slices.Sorted(maps.Keys(givenUpEffects)) {
		e.clock.Advance(time.Minute) // after the record's last change: not older news
		obj := `{"id":"pay_1","metadata":{"key":"site_order_1"},"amount":5}`
		res, err := e.deliver("payments", shopEvent("evt_"+stage+"_"+typ, typ, obj, e.clock.Now().Unix()))
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, "%s, %s about the given-up pay_1: %s", stage, typ, res.Note)
		require.Equal(t, want, res.Note, "%s, %s", stage, typ)
		require.Equal(t, before, e.link("payments", "1"), "%s, %s about the given-up pay_1 changed the link", stage, typ)
		after, err := models.RecordByKey(e.db, "order", "1")
		require.NoError(t, err)
		require.JSONEq(t, rec.Payload, after.Payload, "%s, %s about the given-up pay_1 changed the record", stage, typ)
	}
}

// createAnswered gives order/1's re-created link the new create's answer:
// pay_2, in success.
func (e *env) createAnswered(linkID int64) {
	require.NoError(e.t, e.db.Model(&models.Link{}).Where("id = ?", linkID).
		Updates(map[string]any{"external_id": "pay_2", "status": models.StatusSuccess}).Error, "the new create's answer")
}

// A link re-created after the provider reported its object deleted has
// given that object up. A late delivery or a replay about it still carries
// our key, which finds the link: whatever its type's effect, it must change
// neither the link nor the record, while the new object is being created
// and once it is, and say so where a person reads it (the record's page).
func TestAnEventAboutAnObjectTheLinkGaveUpChangesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := shop(t, db, givenUpEffects)
		e.payment("1") // order/1, linked to pay_1 under our key site_order_1
		res, err := e.deliver("payments", shopEvent("evt_del", "customer.deleted", `{"id":"pay_1","metadata":{"key":"site_order_1"}}`, e.clock.Now().Unix()))
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		linkID := e.link("payments", "1").ID

		late := func(stage, want string) {
			e.lateEventsChangeNothing(stage, want)
			before := e.link("payments", "1")
			res, err := e.rc.Replay(context.Background(), "payments", "evt_del", "ana@example.com")
			require.NoError(t, err)
			require.Equal(t, models.EventIgnored, res.Outcome, "%s, a replay of the deletion: %s", stage, res.Note)
			require.Equal(t, want, res.Note, "%s, a replay of the deletion", stage)
			require.Equal(t, before, e.link("payments", "1"), "%s: a replay of the deletion changed the link", stage)
		}
		late("creating", "about pay_1, which payments reported deleted or missing, and which is being re-created for order/1: nothing to do")
		e.createAnswered(linkID)
		late("created", "about pay_1, which payments reported deleted or missing, and which was re-created as pay_2 for order/1: nothing to do")

		var shown int64
		require.NoError(t, db.Model(&models.ProcessedEvent{}).Where("link_id = ? AND outcome = ?", linkID, models.EventIgnored).Count(&shown).Error)
		require.EqualValues(t, 10, shown, "each late event is on the record's page, saying why it did nothing")

		res, err = e.deliver("payments", shopEvent("evt_new", "payment.succeeded", `{"id":"pay_2","metadata":{"key":"site_order_1"}}`, e.clock.Now().Unix()))
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, "an event about the new object applies: %s", res.Note)
		require.Equal(t, "paid", e.status("1"))
	})
}

// Every re-create gives its link's object up, not only a webhook's
// mark_deleted: the outbox's, when an update found no object after a
// delete of ours whose outcome was unknown (here its create's answer is
// lost, and the link waits with no id); the outbox's delete, once its
// record is written again (a late event about the deleted object — our own
// delete coming back — must not mark the new one deleted); reconciliation's,
// of an object its listing did not return; and an operator's Re-create of a link marked
// deleted before given-up objects were kept (migration 0034), or whose
// object was adopted since its mark. A late event about the old object
// must change nothing there either, while the new object is being created
// and once it is.
func TestAnEventAboutAnObjectAnyRecreateGaveUpChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recreate func(t *testing.T, e *env, l models.Link)
	}{
		{"the outbox's re-create after an update's 404", func(t *testing.T, e *env, l models.Link) {
			require.NoError(t, e.db.Model(&models.Link{}).Where("id = ?", l.ID).
				Updates(map[string]any{"status": models.StatusNew, "delete_unknown": true}).Error)
			claimed, err := models.ClaimDue(e.db, "w/1", e.clock.Now(), time.Minute, 10, nil)
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			out := models.LinkOutcome{Link: claimed[0].Link, Status: models.StatusRetry, ObjectGone: true, NeedsLookup: true,
				NextKey: l.IdempotencyKey + "-g2", CreateBody: claimed[0].Payload, SentFor: claimed[0].ContentHash,
				Attempts: 1, NextAttempt: e.clock.Now().Add(time.Hour), LastError: "the create's answer was lost"}
			stale, err := models.FinishLinks(e.db, []models.LinkOutcome{out}, e.clock.Now())
			require.NoError(t, err)
			require.Zero(t, stale)
		}},
		{"the outbox's delete, its record written again since", func(t *testing.T, e *env, l models.Link) {
			key := []models.RecordKey{{LocalType: "order", LocalID: "1"}}
			_, err := models.TombstoneRecords(e.db, key, e.clock.Now())
			require.NoError(t, err)
			spec := []models.LinkSpec{{Service: "payments", ExternalKey: l.ExternalKey, IdempotencyKey: l.IdempotencyKey}}
			require.NoError(t, models.EnsureLinks(e.db, "order", "1", spec, e.clock.Now()))
			claimed, err := models.ClaimDue(e.db, "w/1", e.clock.Now(), time.Minute, 10, nil)
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			require.True(t, claimed[0].LeaseDeletes)
			out := models.LinkOutcome{Link: claimed[0].Link, Status: models.StatusDeleted, PushedHash: models.DeletedHash,
				SentFor: models.DeletedHash, NextKey: l.IdempotencyKey + "-g2", Attempts: 1, NextAttempt: e.clock.Now()}
			stale, err := models.FinishLinks(e.db, []models.LinkOutcome{out}, e.clock.Now())
			require.NoError(t, err)
			require.Zero(t, stale)
			e.clock.Advance(time.Minute)
			payload, hash, err := models.CanonicalPayload([]byte(`{"amount":1000,"currency":"EUR","status":"pending"}`))
			require.NoError(t, err)
			_, err = models.UpsertRecord(e.db, "order", "1", payload, hash, e.clock.Now())
			require.NoError(t, err)
			require.NoError(t, models.EnsureLinks(e.db, "order", "1", spec, e.clock.Now()))
		}},
		{"reconciliation's re-create of a missing object", func(t *testing.T, e *env, l models.Link) {
			run := models.FixRun{ID: 1, Service: "payments", StartedAt: e.clock.Now().Add(time.Second)}
			e.clock.Advance(time.Minute)
			f := models.Finding{Kind: discrepancy.MissingRemote, LocalType: "order", LocalID: "1", ExternalKey: l.ExternalKey,
				LinkID: &l.ID, LinkExternalID: l.ExternalID}
			applied, err := models.ApplyFix(e.db, run, f, e.clock.Now())
			require.NoError(t, err)
			require.True(t, applied, "the fix re-created the link")
		}},
		{"an operator's Re-create", func(t *testing.T, e *env, l models.Link) {
			now := e.clock.Now()
			require.NoError(t, e.db.Model(&models.Link{}).Where("id = ?", l.ID).
				Updates(map[string]any{"status": models.StatusFailed, "remote_deleted_at": now}).Error, "marked before 0034")
			_, err := models.Recreate(e.db, l.ID, now)
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				e := shop(t, db, givenUpEffects)
				e.payment("1") // order/1, linked to pay_1 under our key site_order_1
				tc.recreate(t, e, e.link("payments", "1"))
				l := e.link("payments", "1")
				require.Empty(t, l.ExternalID, "the link forgot pay_1")

				e.lateEventsChangeNothing("creating",
					"about pay_1, which payments reported deleted or missing, and which is being re-created for order/1: nothing to do")
				e.createAnswered(l.ID)
				e.lateEventsChangeNothing("created",
					"about pay_1, which payments reported deleted or missing, and which was re-created as pay_2 for order/1: nothing to do")
				res, err := e.deliver("payments", shopEvent("evt_new", "payment.succeeded", `{"id":"pay_2","metadata":{"key":"site_order_1"}}`, e.clock.Now().Unix()))
				require.NoError(t, err)
				require.Equal(t, models.EventApplied, res.Outcome, "an event about the new object applies: %s", res.Note)
			})
		})
	}
}

// adopt links the object that carries our key to the link that never
// learned its id; the next push is an update of that object.
func TestAdoptLinksTheObjectCarryingOurKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := shop(t, db, map[string]config.Effect{"customer.created": {Adopt: true}})
		now := e.clock.Now()
		payload, hash, err := models.CanonicalPayload([]byte(`{"email":"a@example.com"}`))
		require.NoError(t, err)
		require.NoError(t, db.Create(&models.Record{LocalType: "customer", LocalID: "7", Payload: payload, ContentHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
		require.NoError(t, db.Create(&models.Link{LocalType: "customer", LocalID: "7", ExternalService: "payments", ExternalKey: "customer_7",
			Status: models.StatusRetry, NeedsLookup: true, Attempts: 2, NextAttemptAt: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}).Error)

		res, err := e.deliver("payments", shopEvent("evt_c1", "customer.created", `{"id":"cus_9","metadata":{"key":"customer_7"}}`, now.Unix()))
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		l := e.link("payments", "7")
		require.Equal(t, "cus_9", l.ExternalID)
		require.Equal(t, models.StatusNew, l.Status, "what the provider holds is unknown: ours is pushed as an update")
		require.False(t, l.NextAttemptAt.After(now))

		res, err = e.deliver("payments", shopEvent("evt_c2", "customer.created", `{"id":"cus_9","metadata":{"key":"customer_7"}}`, now.Unix()))
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome)
		require.Contains(t, res.Note, "already linked to cus_9")
		res, err = e.deliver("payments", shopEvent("evt_c3", "customer.created", `{"id":"cus_10","metadata":{"key":"customer_8"}}`, now.Unix()))
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, "no link carries that key, and no new records are asked for")
	})
}

// update_fields as one expression: its object's members are the fields; a
// number the provider sends as text keeps the field a number.
func TestUpdateFieldsFromOneExpression(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := shop(t, db, map[string]config.Effect{
			"payment.changed": {UpdateFields: config.Body{Expr: `{(.data.object.field): .data.object.value}`}},
			"payment.*":       {Ignore: true},
		})
		e.payment("1")
		later := e.clock.Now().Add(time.Minute).Unix()
		res, err := e.deliver("payments", shopEvent("evt_u1", "payment.changed", `{"id":"pay_1","field":"amount","value":"1250"}`, later))
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		rec, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.JSONEq(t, `{"amount":1250,"currency":"EUR","status":"pending"}`, rec.Payload)

		res, err = e.deliver("payments", shopEvent("evt_u2", "payment.changed", `{"id":"pay_1","field":"amount","value":"1250.00"}`, later+1))
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, "the same amount as text: %s", res.Note)

		res, err = e.deliver("payments", shopEvent("evt_u3", "payment.updated", `{"id":"pay_1"}`, later))
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome)
		require.Contains(t, res.Note, `ignored, as the webhook's effects say for "payment.*"`, "the pattern, since no exact entry matches")

		res, err = e.deliver("payments", shopEvent("evt_u4", "payment.changed", `{"id":"pay_1","field":"a.b","value":"x"}`, later+2))
		require.NoError(t, err)
		require.Equal(t, models.EventFailed, res.Outcome)
		require.Contains(t, res.Note, `yields the field "a.b"`)
	})
}

// The stored copy of an event is redacted: a replay of an update whose
// value is personal data finds "[email]" there, and must not write it.
func TestAReplayNeverWritesAMaskIntoARecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := shop(t, db, map[string]config.Effect{"customer.updated": {UpdateFields: config.Body{Fields: map[string]string{"email": ".data.object.email"}}}})
		e.payment("1")
		later := e.clock.Now().Add(time.Minute).Unix()
		res, err := e.deliver("payments", shopEvent("evt_e1", "customer.updated", `{"id":"pay_1","email":"new@example.com"}`, later))
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome, res.Note)
		rec, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.Contains(t, rec.Payload, `"email":"new@example.com"`, "the first delivery reads the event itself")
		stored, err := models.EventByID(db, "payments", "evt_e1")
		require.NoError(t, err)
		require.NotContains(t, stored.Payload, "new@example.com", "the stored copy masks it")

		res, err = e.rc.Replay(context.Background(), "payments", "evt_e1", "ops@example.com")
		require.NoError(t, err)
		require.Equal(t, models.EventFailed, res.Outcome)
		require.Contains(t, res.Note, "the stored copy of this event masks email")
		after, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.Equal(t, rec.Payload, after.Payload, "the record keeps the real value")
	})
}

// Nor does a replay make a new record of a masked copy.
func TestAReplayMakesNoRecordOfAMaskedCopy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		_, err := models.RecordEvent(db, models.ProcessedEvent{Provider: "crm", EventID: "evt_c", EventType: "contact.created",
			ReceivedAt: e.clock.Now(), Outcome: models.EventFailed,
			Payload: `{"type":"contact.created","data":{"id":"c_77","email":"[email]","name":"Ana"}}`})
		require.NoError(t, err)
		res, err := e.rc.Replay(context.Background(), "crm", "evt_c", "ops@example.com")
		require.NoError(t, err)
		require.Equal(t, models.EventFailed, res.Outcome)
		require.Contains(t, res.Note, "cannot make a record of it")
		_, err = models.RecordByKey(db, "crm_contact", "c_77")
		require.ErrorIs(t, err, models.ErrNotFound)
	})
}

// An event that would make its record larger than a record may be is
// stored as failed, in words, and answered 2xx: refused, it would come back
// refused for days, and take the rest of its list with it.
func TestAnEventTheRecordCannotHoldIsStoredFailed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := shop(t, db, map[string]config.Effect{
			"payment.changed": {UpdateFields: config.Body{Expr: `{(.data.object.field): .data.object.value}`}},
		})
		e.payment("1")
		before, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		later := e.clock.Now().Add(time.Minute).Unix()
		big := `{"id":"pay_1","field":"note","value":"` + strings.Repeat("a", models.MaxPayload) + `"}`
		res, err := e.deliver("payments", shopEvent("evt_big", "payment.changed", big, later))
		require.NoError(t, err)
		require.Equal(t, models.EventFailed, res.Outcome, res.Note)
		require.Contains(t, res.Note, "the record cannot take this change: the payload is")
		after, err := models.RecordByKey(db, "order", "1")
		require.NoError(t, err)
		require.Equal(t, before.Payload, after.Payload)
	})
}
