package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A committed POST sends one payment.succeeded, even when its answer was
// lost; idempotent replays send nothing.
func TestPaymentCreatedSendsOneSucceeded(t *testing.T) {
	h := setupHooks(t, NewPayments, WebhookConfig{})
	h.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // see TestNetHTTPRetriesKeyedPostOnReusedConnection
	first := h.send(t, "POST", "/payments", payment("site_order_1", 1250), "Idempotency-Key", "k1")
	require.Equal(t, http.StatusCreated, first.status, "%s", first.raw)
	require.Equal(t, "succeeded", first.body["status"], "a created payment has succeeded")
	require.Equal(t, "true", h.send(t, "POST", "/payments", payment("site_order_1", 1250), "Idempotency-Key", "k1").header.Get("Idempotent-Replayed"))

	h.p.Script(DropAfterCommit())
	_, err := h.try("POST", "/payments", payment("site_order_2", 900), "Idempotency-Key", "k2")
	require.Error(t, err, "the response is lost")
	require.Equal(t, "true", h.send(t, "POST", "/payments", payment("site_order_2", 900), "Idempotency-Key", "k2").header.Get("Idempotent-Replayed"))

	got := h.flush(t)
	require.Len(t, got, 2, "one event per committed payment, none per replay")
	objects := map[string]map[string]any{}
	for _, d := range got {
		id, ev := eventOf(t, d)
		require.True(t, strings.HasPrefix(id, "evt_"), "Stripe event id %q", id)
		require.Equal(t, "payment.succeeded", ev["type"])
		require.NotZero(t, ev["created"])
		obj := ev["data"].(map[string]any)["object"].(map[string]any)
		objects[obj["external_key"].(string)] = obj
	}
	require.Equal(t, first.body, objects["site_order_1"], "the event carries the object as created")
	require.Contains(t, objects, "site_order_2", "the payment whose answer was lost is announced too")
	require.Equal(t, WebhookStats{Events: 2, Sent: 2, Delivered: 2}, h.p.WebhookStats())
}

// A failing receiver gets the same event, same id and same body, until it
// answers 2xx.
func TestWebhookRetriedUntil2xxWithTheSameID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		newP   func(Options) *Provider
		path   string
		object map[string]any
	}{
		{"CRM, Standard Webhooks", NewCRM, "/deals", deal("site_order_1")},
		{"payments, Stripe", NewPayments, "/payments", payment("site_order_1", 100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := setupHooks(t, tc.newP, WebhookConfig{}, 500, 503)
			require.Equal(t, http.StatusCreated, h.send(t, "POST", tc.path, tc.object).status)
			got := h.flush(t)
			require.Len(t, got, 3, "two failures, then the delivery")
			firstID, _ := eventOf(t, got[0])
			for _, d := range got[1:] {
				id, _ := eventOf(t, d)
				require.Equal(t, firstID, id, "a retry keeps the event id")
				require.Equal(t, got[0].body, d.body, "a retry keeps the body")
			}
			require.Equal(t, WebhookStats{Events: 1, Sent: 3, Delivered: 1, Retries: 2}, h.p.WebhookStats())
		})
	}
}

func TestWebhookGivesUpAfterMaxAttempts(t *testing.T) {
	h := setupHooks(t, NewCRM, WebhookConfig{MaxAttempts: 3}, 500, 500, 500, 500)
	require.Equal(t, http.StatusCreated, h.send(t, "POST", "/deals", deal("site_order_1")).status)
	require.Len(t, h.flush(t), 3)
	require.Equal(t, WebhookStats{Events: 1, Sent: 3, Failed: 1, Retries: 2}, h.p.WebhookStats())
}

func TestWebhookDuplicatesKeepIDAndBody(t *testing.T) {
	h := setupHooks(t, NewCRM, WebhookConfig{DuplicateRate: 1})
	for _, key := range []string{"site_order_1", "site_order_2", "site_order_3"} {
		require.Equal(t, http.StatusCreated, h.send(t, "POST", "/deals", deal(key)).status)
	}
	got := h.flush(t)
	require.Len(t, got, 6, "every event delivered twice")
	bodies := map[string][][]byte{}
	for _, d := range got {
		id, _ := eventOf(t, d)
		bodies[id] = append(bodies[id], d.body)
	}
	require.Len(t, bodies, 3)
	for id, b := range bodies {
		require.Len(t, b, 2, "deliveries of %s", id)
		require.True(t, bytes.Equal(b[0], b[1]), "a duplicate of %s has another body", id)
	}
	require.Equal(t, WebhookStats{Events: 3, Sent: 6, Delivered: 3, Duplicates: 3}, h.p.WebhookStats())
}

// The CRM announces creates, updates and deletes through its API, and
// contacts it is told to; Delete, the tests' backdoor, stays silent.
func TestCRMEvents(t *testing.T) {
	h := setupHooks(t, NewCRM, WebhookConfig{})
	require.Equal(t, http.StatusCreated, h.send(t, "POST", "/deals", deal("site_order_1")).status)
	require.Equal(t, http.StatusOK, h.send(t, "PUT", "/deals/deal_1", map[string]any{"title": "Paid", "external_key": "site_order_1"}).status)
	require.Equal(t, http.StatusNoContent, h.send(t, "DELETE", "/deals/deal_1", nil).status)
	h.p.EmitContactCreated(map[string]any{"id": "contact_9", "email": "new@example.com"})
	require.True(t, h.p.Delete(h.p.Insert(deal("site_order_2"))))

	events := byType(t, h.flush(t))
	require.Len(t, events, 4, "types: %v", events)
	for typ, want := range map[string]map[string]any{
		"deal.created":    {"id": "deal_1", "title": "Order site_order_1", "external_key": "site_order_1", "total": float64(1200)},
		"deal.updated":    {"id": "deal_1", "title": "Paid", "external_key": "site_order_1"},
		"deal.deleted":    {"id": "deal_1", "title": "Paid", "external_key": "site_order_1"},
		"contact.created": {"id": "contact_9", "email": "new@example.com"},
	} {
		require.Len(t, events[typ], 1, typ)
		require.Equal(t, want, events[typ][0]["data"], typ)
		_, err := time.Parse(time.RFC3339, events[typ][0]["timestamp"].(string))
		require.NoError(t, err, "timestamp of %s", typ)
	}
}

func TestPaymentUpdatedAndRefunded(t *testing.T) {
	h := setupHooks(t, NewPayments, WebhookConfig{})
	require.Equal(t, http.StatusCreated, h.send(t, "POST", "/payments", payment("site_order_1", 100)).status)
	require.Equal(t, http.StatusOK, h.send(t, "PUT", "/payments/pay_1", payment("site_order_1", 200)).status)
	require.NoError(t, h.p.Refund("pay_1"))
	require.ErrorContains(t, h.p.Refund("pay_1"), "already refunded")
	require.ErrorIs(t, h.p.Refund("pay_9"), ErrNoSuchObject)
	require.Equal(t, http.StatusNoContent, h.send(t, "DELETE", "/payments/pay_1", nil).status)

	events := byType(t, h.flush(t))
	require.Len(t, events, 3, "Stripe has no event for a deleted payment: %v", events)
	object := func(typ string) map[string]any {
		require.Len(t, events[typ], 1, typ)
		return events[typ][0]["data"].(map[string]any)["object"].(map[string]any)
	}
	require.Equal(t, float64(200), object("payment.updated")["amount"])
	require.Equal(t, "refunded", object("payment.refunded")["status"])
	require.Equal(t, "site_order_1", object("payment.refunded")["external_key"])
	require.Error(t, NewCRM(Options{}).Refund("deal_1"), "the CRM has no refunds")
}

// Ids stay unique across providers (and demo restarts), so a receiver's
// dedup never mistakes a new event for an old one.
func TestEventIDsAreUniquePerProvider(t *testing.T) {
	ids := map[string]bool{}
	for range 2 {
		h := setupHooks(t, NewCRM, WebhookConfig{})
		require.Equal(t, http.StatusCreated, h.send(t, "POST", "/deals", deal("site_order_1")).status)
		got := h.flush(t)
		require.Len(t, got, 1)
		id, _ := eventOf(t, got[0])
		require.False(t, ids[id], "id %s reused", id)
		ids[id] = true
	}
}

// Close cuts a hanging POST and a retry waiting out its backoff, leaves no
// delivery goroutine behind, and later changes send nothing.
func TestCloseStopsEveryDelivery(t *testing.T) {
	waiting := setupHooks(t, NewCRM, WebhookConfig{Backoff: time.Minute}, 500)
	hanging := setupHooks(t, NewPayments, WebhookConfig{})
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	hanging.rcv.mu.Lock()
	hanging.rcv.hang = hang
	hanging.rcv.mu.Unlock()

	require.Equal(t, http.StatusCreated, waiting.send(t, "POST", "/deals", deal("site_order_1")).status)
	require.Equal(t, http.StatusCreated, hanging.send(t, "POST", "/payments", payment("site_order_1", 100)).status)
	for _, h := range []*hookBundle{waiting, hanging} {
		require.Eventually(t, func() bool { return len(h.rcv.deliveries()) == 1 }, 5*time.Second, 5*time.Millisecond)
	}
	start := time.Now()
	waiting.p.Close()
	hanging.p.Close()
	require.Less(t, time.Since(start), 2*time.Second, "Close waited for a backoff or a hanging receiver")
	// Wait has returned; the goroutines may still be on their way out.
	require.Eventually(t, func() bool { return len(webhookGoroutines()) == 0 }, time.Second, time.Millisecond,
		"delivery goroutines left after Close")

	require.NoError(t, waiting.p.Flush(context.Background()), "nothing is pending after Close")
	require.Equal(t, http.StatusOK, waiting.send(t, "PUT", "/deals/deal_1", deal("site_order_1")).status)
	require.Equal(t, WebhookStats{Events: 1, Sent: 1}, waiting.p.WebhookStats(), "no event after Close")
	waiting.p.Close() // twice is fine
}

// webhookGoroutines returns the stacks of goroutines running sender code.
func webhookGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "sandbox.(*webhooks)") {
			out = append(out, g)
		}
	}
	return out
}

func TestSendWebhooksRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		newP func(Options) *Provider
		cfg  WebhookConfig
	}{
		{"no URL", NewPayments, WebhookConfig{Secret: "s"}},
		{"not http", NewPayments, WebhookConfig{URL: "ftp://example.com/", Secret: "s"}},
		{"no Stripe secret", NewPayments, WebhookConfig{URL: "http://example.com/"}},
		{"secret not base64", NewCRM, WebhookConfig{URL: "http://example.com/", Secret: "whsec_not base64!"}},
		{"empty Standard secret", NewCRM, WebhookConfig{URL: "http://example.com/", Secret: "whsec_"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, tc.newP(Options{}).SendWebhooks(tc.cfg))
		})
	}
}

func TestNewStandardSecret(t *testing.T) {
	a, b := NewStandardSecret(), NewStandardSecret()
	require.NotEqual(t, a, b)
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(a, "whsec_"))
	require.Len(t, key, 32)
}

func TestBackoffDoublesUpTo30s(t *testing.T) {
	for _, tc := range []struct {
		retry int
		want  time.Duration
	}{
		{1, 500 * time.Millisecond}, {2, time.Second}, {3, 2 * time.Second}, {6, 16 * time.Second},
		{7, 30 * time.Second}, {1000, 30 * time.Second},
	} {
		require.Equal(t, tc.want, backoff(500*time.Millisecond, tc.retry), "retry %d", tc.retry)
	}
}

func TestDemoSendsWebhooksToHooksPaths(t *testing.T) {
	d, _, err := StartDemo()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close(context.Background())) })
	rcv := newReceiver(t)
	require.Error(t, d.SendWebhooksTo(rcv.srv.URL, "sk", "whsec_!", 0), "a bad CRM secret")
	crmSecret := NewStandardSecret()
	require.NoError(t, d.SendWebhooksTo(rcv.srv.URL+"/", "whsec_pay", crmSecret, 0))

	require.NoError(t, d.Payments.Refund(d.Payments.Insert(payment("site_order_1", 100))))
	d.CRM.EmitContactCreated(map[string]any{"email": "new@example.com"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, d.Payments.Flush(ctx))
	require.NoError(t, d.CRM.Flush(ctx))

	paths := map[string]int{}
	for _, got := range rcv.deliveries() {
		paths[got.path]++
		if got.path == "/hooks/crm" {
			verifyStandard(t, crmSecret, got)
		} else {
			verifyStripe(t, "whsec_pay", got)
		}
	}
	require.Equal(t, map[string]int{"/hooks/payments": 1, "/hooks/crm": 1}, paths)
}
