package redact

import (
	"fmt"
	"net/http"
	"testing"
)

// benchRequest and benchResponse are one send's bodies as the connector
// redacts them: an order with a customer, and a provider's refusal.
var (
	benchRequest = []byte(`{"title":"Order 1042","total":"129.90","currency":"EUR","external_key":"site_order_1042",` +
		`"customer":{"name":"Ana Silva","email":"ana.silva@example.com","phone":"+351 912 345 678","password":"pw-hunter2",` +
		`"address":{"street":"Rua Augusta 12","city":"Lisboa","zip":"1100-053"}},` +
		`"items":[{"sku":"TSHIRT-M-BLUE","qty":2,"price":"24.95"},{"sku":"MUG-WHITE","qty":1,"price":"9.90"},` +
		`{"sku":"POSTER-A2","qty":3,"price":"23.37"}],"note":"leave at the door, ring twice","created_at":"2026-11-29T12:00:00Z"}`)
	benchResponse = []byte(`{"error":{"code":"validation_failed","message":"deal rejected: field total must match items",` +
		`"request_id":"req_7f3a9c","details":[{"field":"total","issue":"mismatch"},{"field":"currency","issue":"ok"}]},` +
		`"docs":"https://crm.example.com/docs/errors#validation_failed"}`)
	benchError = "HTTP 422: deal rejected: field total must match items (request req_7f3a9c, see https://crm.example.com/docs/errors)"
)

// benchSend does what the connector does to one send's request and answer.
func benchSend(r *Redactor, h http.Header) {
	r.Text("POST /deals")
	r.Headers(h)
	r.JSONPrefix(benchRequest, 8192)
	r.Text("HTTP/1.1 422 Unprocessable Entity")
	r.JSONPrefix(benchResponse, 8192)
	r.TextPrefix(benchError, 1024)
}

// BenchmarkSend measures the redaction of one send: its request line,
// headers and body, its answer's status line, body and error message.
func BenchmarkSend(b *testing.B) {
	h := http.Header{"Authorization": {"Bearer crm-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"},
		"Content-Type": {"application/json"}, "Idempotency-Key": {"order-1042-create"}, "Accept": {"application/json"}}
	r := New(nil)
	b.ReportAllocs()
	for b.Loop() {
		benchSend(r, h)
	}
}

// BenchmarkSendWithSecrets is BenchmarkSend as the connector runs it with
// known secrets: twenty configured credentials, and the Redactor of the
// record's own values made from the request body on every send.
func BenchmarkSendWithSecrets(b *testing.B) {
	h := http.Header{"Authorization": {"Bearer crm-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"},
		"Content-Type": {"application/json"}, "Idempotency-Key": {"order-1042-create"}, "Accept": {"application/json"}}
	r := New(nil)
	for i := range 20 {
		r.AddSecrets(fmt.Sprintf("svc%02d-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0", i), fmt.Sprintf("whsec_%02dMfKQ9r8GKYqrTwjUPD8ILPZIo2", i))
	}
	b.ReportAllocs()
	for b.Loop() {
		benchSend(r.ForPayload(benchRequest), h)
	}
}
