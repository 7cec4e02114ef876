package inbox

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

const paySecret = "whsec_test_payments_secret"

type env struct {
	t     *testing.T
	db    *gorm.DB
	clock *clock.Fake
	rc    *Receiver
}

func setup(t *testing.T, db *gorm.DB) *env {
	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	services := map[string]config.Service{
		"payments": {Webhook: &config.Webhook{Scheme: "stripe", Secrets: []string{paySecret}, Effects: config.EffectSet("payments")}},
		"crm":      {Webhook: &config.Webhook{Scheme: "stripe", Secrets: []string{paySecret}, Effects: config.EffectSet("crm")}},
	}
	rc, err := New(db, services, clk, slog.New(slog.DiscardHandler), redact.New(nil))
	require.NoError(t, err)
	return &env{t: t, db: db, clock: clk, rc: rc}
}

// stripeSign signs as Stripe documents it: HMAC-SHA256 of "t.body", hex.
func stripeSign(body string, t time.Time) http.Header {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(paySecret))
	mac.Write([]byte(ts + "." + body))
	return http.Header{"Stripe-Signature": {"t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))}}
}

func (e *env) deliver(service, body string) (Result, error) {
	a, err := e.rc.Receive(context.Background(), service, Delivery{Method: "POST", URL: "http://127.0.0.1/hooks/" + service,
		Header: stripeSign(body, e.clock.Now()), Body: []byte(body)})
	if err != nil {
		return Result{}, err
	}
	require.Len(e.t, a.Events, 1)
	return a.Events[0], nil
}

// payment seeds a pending payment record with a successful link.
func (e *env) payment(id string) {
	now := e.clock.Now()
	payload, hash, err := models.CanonicalPayload([]byte(`{"amount":1000,"currency":"EUR","status":"pending"}`))
	require.NoError(e.t, err)
	require.NoError(e.t, e.db.Create(&models.Record{LocalType: "order", LocalID: id, Payload: payload, ContentHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
	require.NoError(e.t, e.db.Create(&models.Link{LocalType: "order", LocalID: id, ExternalService: "payments", ExternalKey: "site_order_" + id,
		ExternalID: "pay_" + id, Status: models.StatusSuccess, NextAttemptAt: now, PushedHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
}

func (e *env) status(id string) string {
	rec, err := models.RecordByKey(e.db, "order", id)
	require.NoError(e.t, err)
	m, err := decodeObject(rec.Payload)
	require.NoError(e.t, err)
	return fmt.Sprint(m["status"])
}

func paymentEvent(evt, typ, id string) string {
	return fmt.Sprintf(`{"id":%q,"type":%q,"data":{"object":{"id":"pay_%s","external_key":"site_order_%s","status":"succeeded"}}}`, evt, typ, id, id)
}

func TestPaidCannotBePaidTwice(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		res, err := e.deliver("payments", paymentEvent("evt_a", "payment.succeeded", "1"))
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome)
		require.Equal(t, "paid", e.status("1"))

		// A different event saying the same thing: recorded, ignored.
		res, err = e.deliver("payments", paymentEvent("evt_b", "payment.succeeded", "1"))
		require.NoError(t, err)
		require.False(t, res.Duplicate)
		require.Equal(t, models.EventIgnored, res.Outcome)
		require.Contains(t, res.Note, `is already "paid"`)

		res, err = e.deliver("payments", paymentEvent("evt_c", "payment.refunded", "1"))
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome)
		require.Equal(t, "refunded", e.status("1"))
		res, _ = e.deliver("payments", paymentEvent("evt_d", "payment.refunded", "1"))
		require.Equal(t, models.EventIgnored, res.Outcome, "refunded once")

		l, _ := models.LinkByExternal(db, "payments", "pay_1", "")
		rec, _ := models.RecordByKey(db, "order", "1")
		require.Equal(t, rec.ContentHash, l.PushedHash, "the provider holds this state: nothing to push back")
	})
}

func TestADuplicateThreeDaysLaterHasNoEffect(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		applied := 0
		e.rc.Handle("payments", "payment.succeeded", func(context.Context, *gorm.DB, Event, time.Time) (string, error) {
			applied++
			return "counted", nil
		})
		body := paymentEvent("evt_late", "payment.succeeded", "1")
		_, err := e.deliver("payments", body)
		require.NoError(t, err)
		e.clock.Advance(72 * time.Hour)
		res, err := e.deliver("payments", body) // freshly signed, as a re-send is
		require.NoError(t, err)
		require.True(t, res.Duplicate)
		require.Equal(t, 1, applied)
		require.NoError(t, e.rc.Flush(context.Background())) // the re-send was counted in memory
		ev, err := models.EventByID(db, "payments", "evt_late")
		require.NoError(t, err)
		require.Equal(t, 1, ev.Duplicates)
		require.Equal(t, e.clock.Now(), ev.LastDuplicateAt.UTC())
	})
}

func TestAFailedEffectRollsBackAndTheRedeliveryAppliesOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		calls := 0
		paid := EffectSet("payments")["payment.succeeded"]
		e.rc.Handle("payments", "payment.succeeded", func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
			calls++
			note, err := paid(ctx, tx, ev, now) // the change is made…
			if calls == 1 {
				return "", errors.New("ledger unavailable") // …and then the effect fails
			}
			return note, err
		})
		body := paymentEvent("evt_x", "payment.succeeded", "1")
		_, err := e.deliver("payments", body)
		require.Error(t, err, "the provider must get a 5xx and re-send")
		_, err = models.EventByID(db, "payments", "evt_x")
		require.ErrorIs(t, err, models.ErrNotFound, "no processed row after a failed effect")
		require.Equal(t, "pending", e.status("1"), "the half-made change was rolled back")

		res, err := e.deliver("payments", body)
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome)
		require.Equal(t, "paid", e.status("1"))
		res, err = e.deliver("payments", body)
		require.NoError(t, err)
		require.True(t, res.Duplicate)
		require.Equal(t, 2, calls)
	})
}

func TestUnprocessableAndUnknownEventsAreStoredNotRetried(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		res, err := e.deliver("payments", `{"id":"evt_1","type":"payment.succeeded","data":{"object":{}}}`)
		require.NoError(t, err, "answered 2xx: re-sending cannot help")
		require.Equal(t, models.EventFailed, res.Outcome)
		ev, _ := models.EventByID(db, "payments", "evt_1")
		require.Contains(t, ev.Error, "the event names no object")

		res, err = e.deliver("payments", `{"id":"evt_2","type":"customer.subscription.trial_will_end","data":{}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome)

		_, err = e.rc.Receive(context.Background(), "payments", Delivery{Header: http.Header{}, Body: []byte(`{"id":"evt_3"}`)})
		require.ErrorIs(t, err, ErrRejected)
		_, err = e.rc.Receive(context.Background(), "nope", Delivery{Header: http.Header{}, Body: []byte(`{}`)})
		require.ErrorIs(t, err, models.ErrNotFound)
		var n int64
		db.Model(&models.ProcessedEvent{}).Count(&n)
		require.EqualValues(t, 2, n)
	})
}

func TestCRMEffects(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		now := e.clock.Now()
		payload, hash, _ := models.CanonicalPayload([]byte(`{"title":"Order 1","total":"10.00"}`))
		require.NoError(t, db.Create(&models.Record{LocalType: "order", LocalID: "1", Payload: payload, ContentHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
		require.NoError(t, db.Create(&models.Link{LocalType: "order", LocalID: "1", ExternalService: "crm", ExternalKey: "site_order_1",
			ExternalID: "deal_1", Status: models.StatusSuccess, NextAttemptAt: now, PushedHash: hash, CreatedAt: now, UpdatedAt: now}).Error)
		link := func() models.Link {
			l, err := models.LinkByExternal(db, "crm", "deal_1", "")
			require.NoError(t, err)
			return *l
		}

		res, err := e.deliver("crm", `{"id":"m1","type":"deal.updated","data":{"id":"deal_1","external_key":"site_order_1","title":"Order 1","total":"10.00"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, "the CRM matches: nothing to push")
		require.Equal(t, models.StatusSuccess, link().Status)

		res, err = e.deliver("crm", `{"id":"m2","type":"deal.updated","data":{"id":"deal_1","title":"Order 1","total":"99.00"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome)
		require.Contains(t, res.Note, "differs from our desired state in total")
		require.Equal(t, models.StatusNew, link().Status, "our desired state is pushed back")

		res, err = e.deliver("crm", `{"id":"m3","type":"deal.deleted","data":{"id":"deal_1"}}`)
		require.NoError(t, err)
		require.Equal(t, models.EventApplied, res.Outcome)
		l := link()
		require.NotNil(t, l.RemoteDeletedAt)
		require.Equal(t, models.StatusFailed, l.Status)
		require.Contains(t, l.LastError, "Re-create it from the link page")

		for range 2 { // the second is a different event for the same contact: still one record
			res, err = e.deliver("crm", fmt.Sprintf(`{"id":"c-%d","type":"contact.created","data":{"id":"contact_9","name":"Ana"}}`, e.clock.Now().UnixNano()))
			require.NoError(t, err)
			e.clock.Advance(time.Second)
		}
		var n int64
		db.Model(&models.Record{}).Where("local_type = ? AND local_id = ?", "crm_contact", "contact_9").Count(&n)
		require.EqualValues(t, 1, n)
		require.Equal(t, models.EventIgnored, res.Outcome)
	})
}

func TestReplayIsSafe(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		_, err := e.deliver("payments", paymentEvent("evt_r", "payment.succeeded", "1"))
		require.NoError(t, err)
		res, err := e.rc.Replay(context.Background(), "payments", "evt_r", "olga@example.com")
		require.NoError(t, err)
		require.Equal(t, models.EventIgnored, res.Outcome, "already paid: the replay changes nothing")
		require.Equal(t, "paid", e.status("1"))
		_, err = e.rc.Replay(context.Background(), "payments", "evt_none", "olga@example.com")
		require.ErrorIs(t, err, models.ErrNotFound)

		// The engine tells the cases apart, so no caller has to ask again.
		now := e.clock.Now()
		require.NoError(t, db.Create(&models.ProcessedEvent{Provider: "erp", EventID: "evt_gone", EventType: "x.y",
			ReceivedAt: now, Outcome: models.EventIgnored, Payload: `{}`}).Error)
		_, err = e.rc.Replay(context.Background(), "erp", "evt_gone", "olga@example.com")
		require.ErrorIs(t, err, ErrNoWebhooks, "stored, but erp takes no webhooks any more")
		require.NotErrorIs(t, err, models.ErrNotFound)
		_, err = e.rc.Replay(context.Background(), "erp", "evt_none", "olga@example.com")
		require.ErrorIs(t, err, models.ErrNotFound, "neither stored nor configured")

		require.NoError(t, db.Create(&models.ProcessedEvent{Provider: "payments", EventID: "evt_torn", EventType: "payment.succeeded",
			ReceivedAt: now, Outcome: models.EventApplied, Payload: `not json`}).Error)
		_, err = e.rc.Replay(context.Background(), "payments", "evt_torn", "olga@example.com")
		require.ErrorIs(t, err, ErrUnreadableStored)
		require.NotErrorIs(t, err, ErrBadEvent, "a stored payload is not a delivery to refuse")
	})
}

func TestPruneKeepsTheRetentionWindow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		_, err := e.deliver("payments", paymentEvent("evt_old", "x.y", "1"))
		require.NoError(t, err)
		e.clock.Advance(20 * 24 * time.Hour)
		_, err = e.deliver("payments", paymentEvent("evt_new", "x.y", "1"))
		require.NoError(t, err)
		e.clock.Advance(11 * 24 * time.Hour)
		n, err := e.rc.Prune(context.Background(), 30*24*time.Hour)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		_, err = models.EventByID(db, "payments", "evt_new")
		require.NoError(t, err)
	})
}
