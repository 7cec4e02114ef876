package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

func service(url string) config.Service {
	return config.Service{Kind: "http", BaseURL: url, Timeout: 5 * time.Second, IdempotencyHeader: "Idempotency-Key",
		Retry: config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute},
		Objects: map[string]config.Object{"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key",
			IDField: "data.id", Create: "POST /deals", Update: "PUT /deals/{external_id}",
			Lookup: "GET /deals/search?key={external_key}", List: "GET /deals?cursor={cursor}"}}}
}

// Go's transport re-sends, on its own, a request with an Idempotency-Key
// header when a reused connection drops before the answer. The connector
// must not let it: every send is one logged attempt.
func TestADroppedReusedConnectionIsOneAttemptNotASilentResend(t *testing.T) {
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if seen.Add(1) == 2 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // committed or not, the answer is lost
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"data":{"id":"d1"}}`))
	}))
	defer srv.Close()
	c := NewHTTP("crm", service(srv.URL), redact.New(nil), nil)

	first := c.Create(context.Background(), Record{LocalType: "order", Payload: []byte(`{"title":"a"}`)}, "order-1-create")
	require.Equal(t, OK, first.Class, first.Error)
	require.Equal(t, "d1", first.ExternalID)

	second := c.Create(context.Background(), Record{LocalType: "order", Payload: []byte(`{"title":"b"}`)}, "order-2-create")
	require.Equal(t, Temporary, second.Class)
	require.True(t, second.Ambiguous, "the request was written; its outcome is unknown")
	require.Contains(t, second.Error, "whether it took effect is unknown")
	require.EqualValues(t, 2, seen.Load(), "the provider saw each send once; no hidden re-send")
}

func TestLookupCreateUpdateListAgainstAProvider(t *testing.T) {
	var gotKey, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/deals/search":
			gotKey = r.URL.Query().Get("key")
			// A loose search: one exact match, one near miss.
			json.NewEncoder(w).Encode(map[string]any{"items": []any{
				map[string]any{"data": map[string]any{"id": "d9"}, "external_key": "site_order_1&x"},
				map[string]any{"data": map[string]any{"id": "d7"}, "external_key": "site_order_10"},
			}})
		case r.Method == "POST":
			gotKey, gotAuth = r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization")
			w.WriteHeader(201)
			w.Write([]byte(`{"data":{"id":42}}`))
		case r.Method == "PUT" && r.URL.EscapedPath() == "/deals/d%2F7":
			w.Write([]byte(`{"data":{"id":"d/7"}}`))
		case r.Method == "GET" && r.URL.Path == "/deals":
			w.Write([]byte(`{"items":[{"data":{"id":"d1"}}],"next_cursor":"c2"}`))
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	t.Setenv("TEST_CRM_TOKEN", "s3cr3t-value")
	svc := service(srv.URL)
	svc.Headers = map[string]string{"Authorization": "Bearer ${TEST_CRM_TOKEN}"}
	c := NewHTTP("crm", svc, redact.New(nil), nil)
	ctx := context.Background()

	l := c.Lookup(ctx, "order", "site_order_1&x")
	require.Equal(t, OK, l.Class, l.Error)
	require.Equal(t, "site_order_1&x", gotKey, "the key is escaped in the query")
	require.Equal(t, []string{"d9"}, l.Found, "only exact key matches count")
	require.Equal(t, "deal.lookup", l.Operation)

	cr := c.Create(ctx, Record{LocalType: "order", Payload: []byte(`{"title":"a"}`)}, "order-1-create")
	require.Equal(t, "42", cr.ExternalID, "numeric ids are read as text")
	require.Equal(t, "order-1-create", gotKey)
	require.Equal(t, "Bearer s3cr3t-value", gotAuth)
	require.NotContains(t, cr.Request, "s3cr3t-value")

	up := c.Update(ctx, Record{LocalType: "order", ExternalID: "d/7", Payload: []byte(`{"title":"b"}`)})
	require.Equal(t, OK, up.Class, up.Error)
	require.Equal(t, "d/7", up.ExternalID)

	page, call := c.List(ctx, "order", "")
	require.Equal(t, OK, call.Class)
	require.Len(t, page.Items, 1)
	require.Equal(t, "c2", page.NextCursor)
}

func TestHangPastTheTimeoutIsAmbiguous(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	svc := service(srv.URL)
	svc.Timeout = 300 * time.Millisecond
	c := NewHTTP("crm", svc, redact.New(nil), nil)
	start := time.Now()
	call := c.Create(context.Background(), Record{LocalType: "order", Payload: []byte(`{}`)}, "k")
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, Temporary, call.Class)
	require.True(t, call.Ambiguous)
	require.Contains(t, call.Error, "no answer within 300ms")
}

func TestLookup404MeansNotFoundAndRefusedIsNotAmbiguous(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	c := NewHTTP("crm", service(srv.URL), redact.New(nil), nil)
	l := c.Lookup(context.Background(), "order", "site_order_1")
	require.Equal(t, OK, l.Class, "%+v", l)
	require.Empty(t, l.Found)
	srv.Close()
	// A new connector: this one's pooled connection to the closed server may
	// be tried first, and a request written on it is rightly ambiguous.
	c = NewHTTP("crm", service(srv.URL), redact.New(nil), nil)
	call := c.Create(context.Background(), Record{LocalType: "order", Payload: []byte(`{}`)}, "k")
	require.Equal(t, Temporary, call.Class)
	require.False(t, call.Ambiguous, "a refused connection sent nothing")
	require.Contains(t, call.Error, "connection refused")
}

// requireNoPiece fails if s holds eight bytes in a row of secret.
func requireNoPiece(t *testing.T, s, secret, what string) {
	t.Helper()
	for i := 0; i+8 <= len(secret); i++ {
		require.NotContains(t, s, secret[i:i+8], "%s holds a piece of the secret", what)
	}
}

// Of a long body only a prefix is redacted. A masked field before the cut
// shrinks what comes out, so what lies near the cut lands in the excerpt:
// a secret there, straddling the cut or just past it, must not.
func TestExcerptsOfLongBodiesLeakNothingAtTheCut(t *testing.T) {
	const token = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	var answer []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write(answer)
	}))
	defer srv.Close()
	c := NewHTTP("crm", service(srv.URL), redact.New(nil), nil)

	head, mid := `{"password":"`, `","note":"key `
	for at := excerptBody - 40; at <= excerptBody+4; at++ { // where the token starts
		body := []byte(head + strings.Repeat("x", at-len(head)-len(mid)) + mid + token + ` ok","value":"` + token +
			`","name":"api token","tail":"` + strings.Repeat("y ", 100_000) + `"}`)
		answer = body
		call := c.Create(context.Background(), Record{LocalType: "order", Payload: body}, "k")
		require.Equal(t, Permanent, call.Class)
		for what, s := range map[string]string{"request": call.Request, "response": call.Response, "error": call.Error} {
			requireNoPiece(t, s, token, fmt.Sprintf("the %s, token at %d", what, at))
		}
		require.LessOrEqual(t, len(call.Response), excerptLen)
		if at > excerptBody-len(token) && at <= excerptBody { // the cut falls in the token, or just after "key "
			require.Contains(t, call.Response, `"password":"[redacted]","note":"key …"}…`, "the excerpt reaches the cut")
		}
	}

	// The error column redacts a prefix of the answer too.
	for at := errorBody - 40; at <= errorBody+4; at++ {
		msg := strings.Repeat("z", at-len("HTTP 422: ")) + " " + token + " " + strings.Repeat("w ", 100_000)
		answer, _ = json.Marshal(map[string]string{"message": msg})
		call := c.Create(context.Background(), Record{LocalType: "order", Payload: []byte(`{"title":"a"}`)}, "k")
		requireNoPiece(t, call.Error, token, fmt.Sprintf("the error, token at %d", at))
		require.True(t, strings.HasPrefix(call.Error, "HTTP 422: "), call.Error)
	}
}

// A provider may quote back, in its own words, the credentials it was sent
// and the secrets of the payload. The connector masks both in the error and
// the excerpts: the header's value because NewHTTP tells the redactor, the
// password because the body is the record's payload.
func TestEchoedCredentialsAndPayloadSecretsAreMasked(t *testing.T) {
	t.Setenv("SYNCDESK_TEST_CONNECTOR_KEY", "ck-Wx7Yz3")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct{ Password string }
		_ = json.Unmarshal(raw, &body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprintf(w, "key %s refused; password %s is too weak", r.Header.Get("X-Api-Key"), body.Password)
	}))
	defer srv.Close()
	svc := service(srv.URL)
	svc.Headers = map[string]string{"X-Api-Key": "${SYNCDESK_TEST_CONNECTOR_KEY}"}
	r := redact.New(nil)
	c := NewHTTP("crm", svc, r, nil)

	call := c.Create(context.Background(), Record{LocalType: "order", Payload: []byte(`{"title":"a","password":"hunter2 correct horse"}`)}, "k")
	require.Equal(t, Permanent, call.Class)
	require.Equal(t, "HTTP 422: key [redacted] refused; password [redacted] is too weak", call.Error)
	for _, text := range []string{call.Error, call.Request, call.Response} {
		require.NotContains(t, text, "ck-Wx7Yz3")
		require.NotContains(t, text, "hunter2")
	}
	require.Equal(t, "key [redacted]", r.Text("key ck-Wx7Yz3"), "the redactor given to NewHTTP knows the key from now on")
	require.Equal(t, "hunter2 correct horse", r.Text("hunter2 correct horse"), "a record's values stay that record's")
}

// A form body's configured personal-data field, nested in brackets as
// Stripe's are, is masked in the request's excerpt that an attempt row
// keeps; the fields around it stay readable.
func TestAFormBodysConfiguredFieldIsMaskedInTheExcerpt(t *testing.T) {
	body := []byte("amount=500&currency=eur&metadata[tax_id]=DE123456789&shipping[name]=Ada")
	got := Excerpt(redact.New([]string{"tax_id"}), "POST /v1/payment_intents",
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, body)
	require.NotContains(t, got, "DE123456789")
	require.Contains(t, got, "metadata[tax_id]=[redacted]")
	require.Contains(t, got, "amount=500&currency=eur")
}
