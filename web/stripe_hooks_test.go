package web

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// The Stripe acceptance test: a service configured from the stripe preset
// as README tells a user to, served by the real handler, fed events in
// Stripe's own shapes and signed by stripe-go's own test helper, so that
// neither the signature nor the bodies are our reading of Stripe's documents
// checked against itself.
//
// The shapes follow Stripe's API reference (api_version 2025-08-27.basil,
// stripe-go v82's), trimmed to the fields a webhook of that version carries
// that matter here:
//   - the Event: https://docs.stripe.com/api/events/object
//   - the PaymentIntent: https://docs.stripe.com/api/payment_intents/object
//   - the Charge (payment_intent names its PaymentIntent):
//     https://docs.stripe.com/api/charges/object
//   - the Customer: https://docs.stripe.com/api/customers/object
//   - the Invoice: https://docs.stripe.com/api/invoices/object
//
// A Charge carries the PaymentIntent's metadata, our key among it: Stripe
// copies it when the PaymentIntent is confirmed
// (https://support.stripe.com/questions/how-metadata-works-with-related-objects).

// stripeWebhookSecret is the endpoint's signing secret (whsec_…), as the
// Dashboard shows it.
const stripeWebhookSecret = "whsec_acceptance_test_0123456789abcdef"

// stripeConfig is what a user writes: the preset, its objects, and webhook:
// with the signing secret, which also switches the preset's webhook
// settings on. (A user writes ${STRIPE_WEBHOOK_SECRET}; the literal keeps
// the test parallel, as t.Setenv would not.)
const stripeConfig = `
trusted_proxies: [127.0.0.0/8]
services:
  stripe:
    preset: stripe
    headers: {Authorization: "Bearer sk_test_acceptance"}
    webhook: {secrets: [` + stripeWebhookSecret + `]}
    objects:
      customer: {}
      payment: {remote: payment_intent}
`

// stripeStart is when the test's Stripe account lives; the receiver's clock
// starts here and moves a second per delivery, so that a write a duplicate
// should not have made shows in updated_at.
var stripeStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// stripeSite is syncdesk as started from stripeConfig.
type stripeSite struct {
	*bundle
	url string // /hooks/stripe
}

func newStripeSite(t *testing.T, db *gorm.DB) *stripeSite {
	t.Helper()
	cfg := loadConfig(t, stripeConfig)
	require.NotNil(t, cfg.Services["stripe"].Webhook, "webhook: switches the preset's webhook settings on")

	// Wired as main's assemble does; the engine is not started, so nothing
	// is sent to api.stripe.com.
	clk := clock.NewFake(stripeStart)
	log := slog.New(slog.DiscardHandler)
	red := redact.New(nil)
	red.AddSecrets(cfg.Secrets()...)
	svc := cfg.Services["stripe"]
	eng := outbox.New(db, []outbox.Service{{Name: "stripe", Config: svc, Conn: connector.NewHTTP("stripe", svc, red, nil)}},
		clk, log, outbox.Options{})
	rc, err := inbox.New(db, cfg.Services, clk, log, red)
	require.NoError(t, err)
	s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Log: log, Version: "test", Redactor: red, Outbox: eng, Inbox: rc})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &stripeSite{bundle: &bundle{t: t, db: db, clock: clk, srv: srv, cfg: cfg, eng: eng, web: s}, url: srv.URL + "/hooks/stripe"}
}

// linked stores a record through the engine, as the API would, and marks
// its Stripe link created as the engine does when Stripe answers: in
// success, with Stripe's id, holding the record as it was pushed.
func (s *stripeSite) linked(localType, localID, payload, stripeID string) {
	s.t.Helper()
	out, err := s.eng.Upsert(context.Background(), localType, localID, []byte(payload))
	require.NoError(s.t, err)
	require.Len(s.t, out.Links, 1, "%s is routed to stripe", localType)
	rec, err := models.RecordByKey(s.db, localType, localID)
	require.NoError(s.t, err)
	require.NoError(s.t, s.db.Model(&models.Link{}).Where("id = ?", out.Links[0].ID).Updates(map[string]any{
		"status": models.StatusSuccess, "external_id": stripeID, "pushed_hash": rec.ContentHash}).Error)
}

// deliver signs the event with stripe-go's helper at the receiver's time,
// as Stripe signs each attempt anew, checks that stripe-go itself takes the
// delivery for a Stripe event of its API version, and posts it.
func (s *stripeSite) deliver(event string) inbox.Result {
	s.t.Helper()
	s.clock.Advance(time.Second)
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
		Payload: []byte(event), Secret: stripeWebhookSecret, Timestamp: s.clock.Now()})
	ev, err := webhook.ConstructEventWithOptions(signed.Payload, signed.Header, stripeWebhookSecret,
		webhook.ConstructEventOptions{IgnoreTolerance: true}) // its tolerance is against the wall clock
	require.NoError(s.t, err, "stripe-go refuses the test's event: its shape is not Stripe's")
	requireStripeObject(s.t, ev)

	code, body := post(s.t, s.url, event, http.Header{"Stripe-Signature": {signed.Header}})
	var a inbox.Result
	require.Equal(s.t, http.StatusOK, code, "%s: %s", ev.Type, body)
	require.NoError(s.t, json.Unmarshal([]byte(body), &a), body)
	require.Equal(s.t, ev.ID, a.EventID)
	return a
}

// requireStripeObject decodes data.object into stripe-go's type for it: a
// field of the wrong JSON type fails here.
func requireStripeObject(t *testing.T, ev stripe.Event) {
	t.Helper()
	var id string
	var err error
	switch ev.Data.Object["object"] {
	case "payment_intent":
		id, err = decodedID(ev.Data.Raw, func(o stripe.PaymentIntent) string { return o.ID })
	case "charge":
		id, err = decodedID(ev.Data.Raw, func(o stripe.Charge) string { return o.ID })
	case "customer":
		id, err = decodedID(ev.Data.Raw, func(o stripe.Customer) string { return o.ID })
	case "invoice":
		id, err = decodedID(ev.Data.Raw, func(o stripe.Invoice) string { return o.ID })
	default:
		t.Fatalf("%s carries a %v, which the test does not know", ev.Type, ev.Data.Object["object"])
	}
	require.NoError(t, err, "%s's data.object", ev.Type)
	require.Equal(t, ev.Data.Object["id"], id)
}

func decodedID[T any](raw json.RawMessage, id func(T) string) (string, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return id(v), err
}

// stripeEvent is an Event of the given type about object, as Stripe sends
// it to an endpoint; created is the event's time.
func stripeEvent(id, typ string, created int64, object string, previous string) string {
	data := `{"object":` + object + `}`
	if previous != "" {
		data = `{"object":` + object + `,"previous_attributes":` + previous + `}`
	}
	return fmt.Sprintf(`{"id":%q,"object":"event","api_version":%q,"created":%d,"data":%s,"livemode":false,`+
		`"pending_webhooks":1,"request":{"id":"req_%s","idempotency_key":"%s-key"},"type":%q}`,
		id, stripe.APIVersion, created, data, id[4:], id, typ)
}

// stripePayment is one order's payment in Stripe: its PaymentIntent and the
// Charge it made, for our record payment/{n}.
type stripePayment struct {
	n                         int
	key, intent, charge, cust string
	created                   int64
}

func newStripePayment(n int) stripePayment {
	return stripePayment{n: n, key: fmt.Sprintf("payment_%d", n), intent: stripeID("pi", "3QaccPi", n, 24),
		charge: stripeID("ch", "3QaccCh", n, 24), cust: stripeID("cus", "QaccCu", n, 14), created: stripeStart.Unix()}
}

// stripeID is an id shaped as Stripe's: a prefix, then size letters and
// digits (24 for events, PaymentIntents, Charges and Invoices, 14 for
// Customers, as the examples of the API reference: pi_3MtwBwLkdIwHu7ix28a3tqPa,
// cus_NffrFeUfNV2Hib).
func stripeID(prefix, tag string, n, size int) string {
	return fmt.Sprintf("%s_%s%0*d", prefix, tag, size-len(tag), n)
}

// The three events of a payment's life, and their effects in the preset.
const (
	piCreated   = "payment_intent.created"   // adopt: the link has Stripe's id already
	piSucceeded = "payment_intent.succeeded" // set_state: paid
	chRefunded  = "charge.refunded"          // set_state: refunded, by the charge's payment_intent
)

// event is the payment's event of a type, the same bytes each time it is
// sent: a re-send is the same event.
func (p stripePayment) event(typ string) string {
	switch typ {
	case piCreated:
		return stripeEvent(stripeID("evt", "1QaccCreated", p.n, 24), typ, p.created, p.intentObject("requires_payment_method", 0, "null"), "")
	case piSucceeded:
		return stripeEvent(stripeID("evt", "3QaccSucceeded", p.n, 24), typ, p.created+5,
			p.intentObject("succeeded", 2000, fmt.Sprintf("%q", p.charge)), "")
	case chRefunded:
		return stripeEvent(stripeID("evt", "3QaccRefunded", p.n, 24), typ, p.created+3600, p.chargeObject(), `{"amount_refunded":0,"refunded":false}`)
	}
	panic("no such event: " + typ)
}

func (p stripePayment) intentObject(status string, received int, latestCharge string) string {
	return fmt.Sprintf(`{"id":%q,"object":"payment_intent","amount":2000,"amount_capturable":0,"amount_received":%d,`+
		`"automatic_payment_methods":{"allow_redirects":"always","enabled":true},"canceled_at":null,"cancellation_reason":null,`+
		`"capture_method":"automatic_async","client_secret":"%s_secret_test","confirmation_method":"automatic","created":%d,`+
		`"currency":"eur","customer":%q,"description":null,"last_payment_error":null,"latest_charge":%s,"livemode":false,`+
		`"metadata":{"syncdesk_key":%q},"next_action":null,"payment_method":"pm_1QaccTest","payment_method_types":["card"],`+
		`"receipt_email":null,"setup_future_usage":null,"status":%q}`,
		p.intent, received, p.intent, p.created, p.cust, latestCharge, p.key, status)
}

func (p stripePayment) chargeObject() string {
	return fmt.Sprintf(`{"id":%q,"object":"charge","amount":2000,"amount_captured":2000,"amount_refunded":2000,`+
		`"balance_transaction":"txn_3QaccTest","billing_details":{"address":null,"email":null,"name":null,"phone":null},`+
		`"captured":true,"created":%d,"currency":"eur","customer":%q,"description":null,"disputed":false,"failure_code":null,`+
		`"failure_message":null,"livemode":false,"metadata":{"syncdesk_key":%q},"outcome":{"network_status":"approved_by_network",`+
		`"reason":null,"risk_level":"normal","seller_message":"Payment complete.","type":"authorized"},"paid":true,`+
		`"payment_intent":%q,"payment_method":"pm_1QaccTest","receipt_url":null,"refunded":true,"status":"succeeded"}`,
		p.charge, p.created+5, p.cust, p.key, p.intent)
}

// orders is every distinct order of the items (equal items alike).
func orders(items []string) [][]string {
	if len(items) == 0 {
		return [][]string{nil}
	}
	var out [][]string
	for i, it := range items {
		if slices.Contains(items[:i], it) {
			continue // the same item first gives the same orders
		}
		rest := append(append([]string{}, items[:i]...), items[i+1:]...)
		for _, tail := range orders(rest) {
			out = append(out, append([]string{it}, tail...))
		}
	}
	return out
}

// stripeRows is what a delivery may change about a payment.
type stripeRows struct {
	Record models.Record
	Link   models.Link
}

func (s *stripeSite) rows(localType, localID string) stripeRows {
	s.t.Helper()
	rec, err := models.RecordByKey(s.db, localType, localID)
	require.NoError(s.t, err)
	links, err := models.RecordLinks(s.db, localType, localID)
	require.NoError(s.t, err)
	require.Len(s.t, links, 1)
	return stripeRows{Record: *rec, Link: links[0]}
}

func (r stripeRows) status(t *testing.T) string {
	t.Helper()
	var p struct{ Status string }
	require.NoError(t, json.Unmarshal([]byte(r.Record.Payload), &p))
	return p.Status
}

// A payment's record goes pending → paid → refunded whatever order Stripe
// delivers its events in (Stripe does not promise an order:
// https://docs.stripe.com/webhooks#event-ordering), each re-sent once as
// Stripe re-sends after a lost answer; never backwards, and a re-send
// answers 2xx as a duplicate and changes nothing.
func TestStripePresetPaymentEndsRefundedInAnyOrder(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		site := newStripeSite(t, db)
		all := orders([]string{piCreated, piSucceeded, piSucceeded, chRefunded, chRefunded})
		require.Len(t, all, 30, "5!/(2!·2!) orders of one created, two succeeded and two refunded")
		rank := map[string]int{"pending": 0, "paid": 1, "refunded": 2}
		moves := map[string]string{piSucceeded: "paid", chRefunded: "refunded"}
		for i, order := range all {
			p := newStripePayment(i)
			site.linked("payment", itoa(int64(i)), `{"amount":2000,"currency":"eur","status":"pending"}`, p.intent)
			sent := map[string]bool{}
			want := "pending"
			for step, typ := range order {
				at := fmt.Sprintf("order %d %v, delivery %d (%s)", i, order, step+1, typ)
				before := site.rows("payment", itoa(int64(i)))
				got := site.deliver(p.event(typ))
				after := site.rows("payment", itoa(int64(i)))
				if sent[typ] {
					require.True(t, got.Duplicate, "%s: a re-send is a duplicate", at)
					require.Equal(t, before, after, "%s: a duplicate changes nothing", at)
					continue
				}
				sent[typ] = true
				require.False(t, got.Duplicate, at)
				to, forward := moves[typ]
				switch {
				case forward && rank[to] > rank[want]:
					require.Equal(t, models.EventApplied, got.Outcome, "%s: %s", at, got.Note)
					require.Equal(t, fmt.Sprintf("payment/%d went from %s to %s", i, want, to), got.Note, at)
					want = to
				default: // created, or paid after refunded: older news
					require.Equal(t, models.EventIgnored, got.Outcome, "%s: %s", at, got.Note)
					require.Equal(t, before.Record, after.Record, "%s: an ignored event leaves the record", at)
				}
				require.Equal(t, want, after.status(t), at)
			}
			end := site.rows("payment", itoa(int64(i)))
			require.Equal(t, "refunded", end.status(t), "order %v", order)
			// Stripe told us: nothing is owed back to it.
			require.Equal(t, models.StatusSuccess, end.Link.Status, "order %v", order)
			require.Equal(t, end.Record.ContentHash, end.Link.PushedHash, "order %v", order)
			require.Equal(t, p.intent, end.Link.ExternalID)
		}

		var leaked int64
		require.NoError(t, db.Model(&models.ProcessedEvent{}).Where("payload LIKE ?", "%_secret_test%").Count(&leaked).Error)
		require.Zero(t, leaked, "a PaymentIntent's client_secret is not stored")

		require.NoError(t, site.web.inbox.Flush(context.Background())) // re-sends are counted in memory
		var counts []struct {
			EventType, Outcome string
			N, Dups            int64
		}
		require.NoError(t, db.Model(&models.ProcessedEvent{}).Select("event_type, outcome, COUNT(*) AS n, SUM(duplicates) AS dups").
			Group("event_type, outcome").Order("event_type, outcome").Scan(&counts).Error)
		// A succeeded that comes after the refund is older news: in half
		// the orders the refund comes first.
		require.Equal(t, []struct {
			EventType, Outcome string
			N, Dups            int64
		}{
			{chRefunded, models.EventApplied, 30, 30},
			{piCreated, models.EventIgnored, 30, 0},
			{piSucceeded, models.EventApplied, 15, 15},
			{piSucceeded, models.EventIgnored, 15, 15},
		}, counts)
	})
}

// customer.deleted marks the customer's link: the object is gone in Stripe,
// and a person decides whether it is re-created; the link page says so in
// plain words. A re-send is a duplicate and changes nothing.
func TestStripePresetCustomerDeleted(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		site := newStripeSite(t, db)
		site.linked("customer", "7", `{"email":"jenny.rosen@example.com","name":"Jenny Rosen"}`, "cus_QaccJennyR0007")
		// The event carries the customer as it was when deleted.
		customer := `{"id":"cus_QaccJennyR0007","object":"customer","address":null,"balance":0,"created":1764417600,` +
			`"currency":"eur","default_source":null,"delinquent":false,"description":null,"email":"jenny.rosen@example.com",` +
			`"invoice_prefix":"QACC0007","invoice_settings":{"custom_fields":null,"default_payment_method":null,"footer":null,` +
			`"rendering_options":null},"livemode":false,"metadata":{"syncdesk_key":"customer_7"},"name":"Jenny Rosen",` +
			`"phone":null,"preferred_locales":[],"shipping":null,"tax_exempt":"none","test_clock":null}`
		deletedEvent := stripeEvent("evt_1QaccCustomerDeleted0007", "customer.deleted", stripeStart.Unix()+60, customer, "")

		got := site.deliver(deletedEvent)
		require.False(t, got.Duplicate)
		require.Equal(t, models.EventApplied, got.Outcome, got.Note)
		after := site.rows("customer", "7")
		require.NotNil(t, after.Link.RemoteDeletedAt, "the link knows its object is gone")
		require.True(t, site.clock.Now().Equal(*after.Link.RemoteDeletedAt), "marked at the delivery's time: %v", after.Link.RemoteDeletedAt)
		require.Equal(t, models.StatusFailed, after.Link.Status, "a person decides: it is in the failed list")
		require.Equal(t, "stripe reports cus_QaccJennyR0007 deleted (event evt_1QaccCustomerDeleted0007). "+
			"Re-create it from the link page once you have confirmed it should exist.", after.Link.LastError)

		again := site.deliver(deletedEvent)
		require.True(t, again.Duplicate)
		require.Equal(t, models.EventApplied, again.Outcome, "a duplicate answers the first delivery's outcome")
		require.Equal(t, after, site.rows("customer", "7"), "a duplicate changes nothing")

		page := site.signedIn("sam@example.com", models.RoleOperator).get("/links/" + itoa(after.Link.ID))
		require.Equal(t, http.StatusOK, page.status)
		require.Contains(t, page.body, "stripe reports this object deleted.")
		require.Contains(t, page.body, "Re-create it from the link page once you have confirmed it should exist.")
		require.Contains(t, page.body, `data-testid="recreate"`)
	})
}

// An event type the preset has no effect for (invoice.paid) is stored as
// ignored, answered 2xx, and changes nothing.
func TestStripePresetIgnoresUnrelatedEvents(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		site := newStripeSite(t, db)
		p := newStripePayment(1)
		site.linked("payment", "1", `{"amount":2000,"currency":"eur","status":"pending"}`, p.intent)
		before := site.rows("payment", "1")
		invoice := fmt.Sprintf(`{"id":"in_1QaccInvoice000000000001","object":"invoice","account_country":"DE","amount_due":2000,`+
			`"amount_paid":2000,"amount_remaining":0,"attempt_count":1,"attempted":true,"auto_advance":false,`+
			`"billing_reason":"manual","collection_method":"charge_automatically","created":%d,"currency":"eur",`+
			`"customer":%q,"livemode":false,"metadata":{"syncdesk_key":%q},"number":"QACC-0001","paid":true,`+
			`"status":"paid","total":2000}`, p.created, p.cust, p.key)
		got := site.deliver(stripeEvent("evt_1QaccInvoicePaid00000001", "invoice.paid", p.created+10, invoice, ""))
		require.False(t, got.Duplicate)
		require.Equal(t, models.EventIgnored, got.Outcome, got.Note)
		row, err := models.EventByID(db, "stripe", "evt_1QaccInvoicePaid00000001")
		require.NoError(t, err)
		require.Equal(t, "invoice.paid", row.EventType)
		require.Equal(t, models.EventIgnored, row.Outcome)
		require.Equal(t, before, site.rows("payment", "1"))
	})
}

// A person replays a stored event once the record is set right, and it
// applies as its first delivery would have: the replay's whole purpose.
// Here the first delivery failed (the record's status was none of the
// preset's states); the record is corrected, and the event replayed from
// its page.
func TestStripePresetReplayAfterTheRecordIsSetRight(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		site := newStripeSite(t, db)
		p := newStripePayment(1)
		site.linked("payment", "1", `{"amount":2000,"currency":"eur","status":"in_review"}`, p.intent)
		got := site.deliver(p.event(piSucceeded))
		require.Equal(t, models.EventFailed, got.Outcome, got.Note)
		require.Equal(t, "in_review", site.rows("payment", "1").status(t))

		_, err := site.eng.Upsert(context.Background(), "payment", "1", []byte(`{"amount":2000,"currency":"eur","status":"pending"}`))
		require.NoError(t, err)
		page := "/events/stripe/" + got.EventID
		r := site.signedIn("olga@example.com", models.RoleOperator).post(page, page+"/replay", nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		row, err := models.EventByID(db, "stripe", got.EventID)
		require.NoError(t, err)
		require.Equal(t, models.EventFailed, row.Outcome, "the first outcome is kept")
		require.Contains(t, row.Payload, `"id":"`+p.intent+`"`, "the stored copy keeps the PaymentIntent's id readable, not [redacted]")
		replays, _, err := models.EventReplays(db, "stripe", got.EventID, 10)
		require.NoError(t, err)
		require.Len(t, replays, 1)
		require.Equal(t, models.EventApplied, replays[0].Outcome, replays[0].Note)
		require.Equal(t, "olga@example.com", replays[0].ReplayedBy)
		require.Equal(t, "paid", site.rows("payment", "1").status(t))
	})
}
