package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/sync/config"
)

// Demo is the two sandbox providers served on loopback for `go run .`
// without a config file: a CRM and a payment provider with faults on, so a
// newcomer sees success, retry and failed links within a minute.
type Demo struct {
	CRM, Payments *Provider
	servers       []*http.Server
	// The webhook secrets, made fresh at each start and known to both sides.
	paymentsSecret, crmSecret string
}

// demoDuplicateRate makes one delivery in ten arrive twice, so the inbox
// shows duplicates counted and ignored.
const demoDuplicateRate = 0.1

// demoFaults is the fault mix of the demo: mostly healthy, never quiet.
var demoFaults = Options{Latency: 40 * time.Millisecond, Rate5xx: 0.06, Rate429: 0.04, RateHang: 0.01,
	RateDropAfterCommit: 0.04, RateValidation: 0.02, RetryAfter: 3 * time.Second, HangFor: 20 * time.Second}

// StartDemo serves both providers on 127.0.0.1 at free ports and returns
// the services that point at them.
func StartDemo() (*Demo, map[string]config.Service, error) {
	d := &Demo{CRM: NewCRM(demoFaults), Payments: NewPayments(demoFaults)}
	crmURL, err := d.serve(d.CRM)
	if err != nil {
		return nil, nil, err
	}
	payURL, err := d.serve(d.Payments)
	if err != nil {
		d.Close(context.Background())
		return nil, nil, err
	}
	d.paymentsSecret, d.crmSecret = "whsec_"+randomHex(24), NewStandardSecret()
	retry := config.Retry{MaxAttempts: 5, Base: 2 * time.Second, Max: 30 * time.Second}
	services := map[string]config.Service{
		"crm": {Kind: "http", BaseURL: crmURL, Timeout: 5 * time.Second, Retry: retry,
			Webhook: &config.Webhook{Scheme: "standard", Secrets: []string{d.crmSecret}, Effects: config.EffectSet("crm")},
			Objects: map[string]config.Object{
				"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key", IDField: "id",
					Create: "POST /deals", Update: "PUT /deals/{external_id}",
					Lookup: "GET /deals?external_key={external_key}", List: "GET /deals?cursor={cursor}"},
				"lead": {Remote: "deal", ExternalKey: "site_lead_{local_id}", KeyField: "external_key", IDField: "id",
					Create: "POST /deals", Update: "PUT /deals/{external_id}",
					Lookup: "GET /deals?external_key={external_key}", List: "GET /deals?cursor={cursor}"},
			}},
		"payments": {Kind: "http", BaseURL: payURL, Timeout: 5 * time.Second, Retry: retry, IdempotencyHeader: "Idempotency-Key",
			Webhook: &config.Webhook{Scheme: "stripe", Secrets: []string{d.paymentsSecret}, Effects: config.EffectSet("payments")},
			// The payment's status is the provider's to say (its webhooks set
			// ours); reconciliation compares only what we ask it to charge.
			Reconcile: config.Reconcile{Compare: map[string][]string{"order": {"amount", "currency"}}},
			Objects: map[string]config.Object{
				"order": {Remote: "payment", ExternalKey: "site_order_{local_id}", KeyField: "external_key", IDField: "id",
					Create: "POST /payments", Update: "PUT /payments/{external_id}", List: "GET /payments?cursor={cursor}"},
			}},
	}
	return d, services, nil
}

func (d *Demo) serve(p *Provider) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("sandbox listener: %w", err)
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	d.servers = append(d.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// StartWebhooks has both sandboxes send their signed webhooks to the
// syncdesk serving at baseURL.
func (d *Demo) StartWebhooks(baseURL string) error {
	return d.SendWebhooksTo(baseURL, d.paymentsSecret, d.crmSecret, demoDuplicateRate)
}

// SendWebhooksTo makes both providers send signed webhooks to syncdesk at
// baseURL: payments (Stripe scheme, paymentsSecret as-is) to
// baseURL+"/hooks/payments", the CRM (Standard Webhooks, crmSecret
// "whsec_<base64>") to baseURL+"/hooks/crm".
func (d *Demo) SendWebhooksTo(baseURL, paymentsSecret, crmSecret string, duplicateRate float64) error {
	base := strings.TrimSuffix(baseURL, "/")
	err := d.Payments.SendWebhooks(WebhookConfig{URL: base + "/hooks/payments", Secret: paymentsSecret, DuplicateRate: duplicateRate})
	if err != nil {
		return err
	}
	if err := d.CRM.SendWebhooks(WebhookConfig{URL: base + "/hooks/crm", Secret: crmSecret, DuplicateRate: duplicateRate}); err != nil {
		d.Payments.Close() // both or neither
		return err
	}
	return nil
}

// Close stops webhook delivery, then the sandbox servers; hanging requests
// are cut off.
func (d *Demo) Close(ctx context.Context) error {
	d.CRM.Close()
	d.Payments.Close()
	var errs []error
	for _, s := range d.servers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// DemoRecord is one seeded record.
type DemoRecord struct {
	Type, ID, Payload string
}

// DemoRecords are ~200 records of two types: orders (to the CRM and the
// payment provider) and leads (to the CRM). A few are invalid on purpose, so
// that the failed list has something a person can read and fix.
func DemoRecords() []DemoRecord {
	var out []DemoRecord
	customers := []string{"Acme GmbH", "Borys Shop", "Café Nord", "Dnipro Tools", "Elm & Co", "Fjord AS"}
	for i := 1; i <= 150; i++ {
		amount := 1000 + (i*739)%90000
		title := fmt.Sprintf("Order %d — %s", 10000+i, customers[i%len(customers)])
		if i%37 == 0 {
			amount = 0 // refused by the payment provider: amount must be positive
		}
		out = append(out, DemoRecord{Type: "order", ID: fmt.Sprint(10000 + i), Payload: fmt.Sprintf(
			`{"title":%q,"amount":%d,"currency":"EUR","status":"pending","customer":{"name":%q,"email":"buyer%d@example.com"}}`,
			title, amount, customers[i%len(customers)], i)})
	}
	for i := 1; i <= 50; i++ {
		title := fmt.Sprintf("Lead %d — %s", 500+i, customers[(i+2)%len(customers)])
		if i%23 == 0 {
			title = "" // refused by the CRM: title is required
		}
		out = append(out, DemoRecord{Type: "lead", ID: fmt.Sprint(500 + i), Payload: fmt.Sprintf(
			`{"title":%q,"stage":"new","phone":"+380 44 000 %04d"}`, title, i)})
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
