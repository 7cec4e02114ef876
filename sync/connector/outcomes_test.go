package connector

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// answering is a provider that gives every request the same answer.
func answering(t *testing.T, status int, body string) *HTTP {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return NewHTTP("crm", service(srv.URL), redact.New(nil), nil)
}

// A create the provider answered with a 2xx may have made the object even
// when the answer holds no id we can read. Calling that permanent failed the
// link without a lookup, and an operator's Retry then created a second one.
func TestCreateAnsweredWithoutAnIDMayHaveCreatedTheObject(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"202 accepted, no body", http.StatusAccepted, ""},
		{"204 no content", http.StatusNoContent, ""},
		{"201 with the id under another field", http.StatusCreated, `{"deal":{"id":"d1"}}`},
		{"200 with a body that is not JSON", http.StatusOK, "created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := answering(t, tc.status, tc.body).Create(context.Background(), Record{LocalType: "order", Payload: []byte(`{"title":"a"}`)}, "order-1-create")
			require.Equal(t, Temporary, call.Class, "a 2xx without an id is retried, not given up on")
			require.True(t, call.Ambiguous, "the object may exist: the next attempt must look it up first")
			require.Empty(t, call.ExternalID)
			require.Equal(t, tc.status, call.HTTPCode)
			require.Contains(t, call.Error, "without the new object's id")
			require.Contains(t, call.Error, `"data.id"`, "the error names the field that was read")
		})
	}
}

// Only a 404 or an explicitly empty list says that no object carries the
// key: the engine creates on "none", so an answer of any other shape must
// fail the lookup rather than read as empty. The service reads the key at
// "external_key" and the id at "data.id".
func TestALookupAnswerItCannotReadIsNotNoneFound(t *testing.T) {
	const key = "site_order_1"
	mine := `{"external_key":"site_order_1","data":{"id":"d1"}}`
	for _, tc := range []struct {
		name   string
		status int
		body   string
		found  []string // nil: none found
		err    string   // "": the lookup succeeds
	}{
		{"404", http.StatusNotFound, `{"error":"no such deal"}`, nil, ""},
		{"an empty array", 200, `[]`, nil, ""},
		{"empty items", 200, `{"items":[]}`, nil, ""},
		{"items null, as Go writes an empty slice", 200, `{"items":null}`, nil, ""},
		{"empty data", 200, `{"data":[],"next_cursor":""}`, nil, ""},
		{"an array", 200, `[` + mine + `]`, []string{"d1"}, ""},
		{"one object listed twice", 200, `[` + mine + `,` + mine + `]`, []string{"d1"}, ""},
		{"items", 200, `{"items":[` + mine + `]}`, []string{"d1"}, ""},
		{"data", 200, `{"data":[` + mine + `]}`, []string{"d1"}, ""},
		{"one object carrying the key", 200, mine, []string{"d1"}, ""},
		{"one object carrying another key", 200, `{"external_key":"site_order_10","data":{"id":"d7"}}`, nil, ""},
		{"near misses of a loose search", 200, `[{"external_key":"site_order_10","data":{"id":"d7"}}]`, nil, ""},
		{"a numeric id", 200, `[{"external_key":"site_order_1","data":{"id":42}}]`, []string{"42"}, ""},
		{"two objects carrying the key", 200, `[` + mine + `,{"external_key":"site_order_1","data":{"id":"d2"}}]`, []string{"d1", "d2"}, ""},

		{"another wrapper (HubSpot's results)", 200, `{"total":1,"results":[` + mine + `]}`, nil, `expected a list ([…], {"items":[…]} or {"data":[…]}), or one object with a "external_key" field`},
		{"an empty wrapper of another name", 200, `{"total":0,"results":[]}`, nil, "not understood"},
		{"one object without the key field", 200, `{"data":{"id":"d1"}}`, nil, "not understood"},
		{"an empty body", 200, ``, nil, "not understood"},
		{"JSON null", 200, `null`, nil, "not understood"},
		{"not JSON", 200, `<html>search</html>`, nil, "not understood"},
		{"a list of ids", 200, `["d1"]`, nil, "not understood"},
		{"an object without the key field", 200, `[{"data":{"id":"d1"}}]`, nil, `an object in the list has no "external_key" field`},
		{"a key that is not text", 200, `[{"external_key":{"value":"site_order_1"},"data":{"id":"d1"}}]`, nil, `"external_key" field is not text`},
		{"the key without an id", 200, `[{"external_key":"site_order_1","id":"d1"}]`, nil, `carrying the key has no "data.id" field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := answering(t, tc.status, tc.body).Lookup(context.Background(), "order", key)
			if tc.err != "" {
				require.Equal(t, Temporary, call.Class, "an unreadable answer is retried, never taken for none found")
				require.False(t, call.Ambiguous, "a lookup changes nothing")
				require.Empty(t, call.Found)
				require.Contains(t, call.Error, "the lookup's answer was not understood: ")
				require.Contains(t, call.Error, tc.err)
				return
			}
			require.Equal(t, OK, call.Class, call.Error)
			require.Equal(t, tc.found, call.Found)
			if len(tc.found) == 1 {
				require.Equal(t, tc.found[0], call.ExternalID)
			} else {
				require.Empty(t, call.ExternalID)
			}
		})
	}
}

// carrying reads outside input: whatever the answer, it never panics, and
// it reports none found only for a list shape it knows or for one object
// that carries the key field.
func FuzzLookupAnswer(f *testing.F) {
	for _, s := range []string{`[]`, `{"items":[]}`, `{"data":[]}`, `{"total":1,"results":[{"k":"a"}]}`,
		`[{"k":"a","id":"1"}]`, `{"k":"a","id":1}`, `{"k":{"x":1}}`, `[1,"a",null]`, `null`, ``, `{"items":{"k":"a"}}`} {
		f.Add([]byte(s))
	}
	obj := config.Object{KeyField: "k", IDField: "id"}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		_ = dec.Decode(&v)
		ids, _, err := carrying(v, obj, "a")
		if err != nil || len(ids) > 0 {
			return
		}
		switch t0 := v.(type) {
		case []any:
			return
		case map[string]any:
			_, items := t0["items"].([]any)
			_, data := t0["data"].([]any)
			if items || data || t0["k"] != nil {
				return
			}
		}
		t.Fatalf("%q read as none found", body)
	})
}

// paymentsService is the sandbox's payment provider as a service: it
// honours Idempotency-Key and cannot look objects up.
func paymentsService(url string) config.Service {
	svc := service(url)
	svc.Timeout = time.Second
	svc.Objects = map[string]config.Object{"payment": {Remote: "payment", ExternalKey: "site_payment_{local_id}",
		KeyField: "external_key", IDField: "id", Create: "POST /payments", Update: "PUT /payments/{external_id}"}}
	return svc
}

// Our sandbox, like Stripe, answers 409 to a create whose Idempotency-Key an
// earlier request still holds. That is "try again later": the earlier one
// may yet create the object, and a re-send with the key gets its answer.
// Classified permanent, it failed the link while the first was running.
func TestA409ToAKeyedCreateWhileTheKeyIsHeldIsRetried(t *testing.T) {
	p := sandbox.NewPayments(sandbox.Options{})
	srv := httptest.NewServer(p)
	defer srv.Close()
	c := NewHTTP("payments", paymentsService(srv.URL), redact.New(nil), nil)
	ctx := context.Background()
	body := []byte(`{"amount":100,"currency":"EUR","external_key":"site_payment_1"}`)

	p.Script(sandbox.Hang())
	first := make(chan Call, 1)
	go func() {
		first <- c.Create(ctx, Record{LocalType: "payment", Key: "site_payment_1", Payload: body}, "payment-1-create")
	}()
	require.Eventually(t, func() bool { return p.Requests().Faults[sandbox.FaultHang] == 1 }, 2*time.Second, 5*time.Millisecond)

	second := c.Create(ctx, Record{LocalType: "payment", Key: "site_payment_1", Payload: body}, "payment-1-create")
	require.Equal(t, http.StatusConflict, second.HTTPCode)
	require.Equal(t, Temporary, second.Class, "the key is held by a request still running: retry later")
	require.True(t, second.Ambiguous, "the request holding the key may take effect")
	require.Contains(t, second.Error, "HTTP 409: a request with this idempotency key is in progress")

	require.Equal(t, Temporary, (<-first).Class)
	var retried Call
	require.Eventually(t, func() bool { // once the provider has let go of the key
		retried = c.Create(ctx, Record{LocalType: "payment", Key: "site_payment_1", Payload: body}, "payment-1-create")
		return retried.Class != Temporary
	}, 2*time.Second, 10*time.Millisecond)
	require.Equal(t, OK, retried.Class, retried.Error)
	require.Equal(t, 1, p.CountByKey("site_payment_1"))
}

// Only a request that carried an Idempotency-Key reads a 409 as "the key is
// held": any other 409 is the provider refusing the request, as before.
func TestA409ToARequestWithoutAKeyStaysPermanent(t *testing.T) {
	c := answering(t, http.StatusConflict, `{"error":"external_key site_order_1 is already used by d1"}`)
	ctx := context.Background()
	keyed := c.Create(ctx, Record{LocalType: "order", Payload: []byte(`{"title":"a"}`)}, "order-1-create")
	require.Equal(t, Temporary, keyed.Class, "the create carried its key")
	require.True(t, keyed.Ambiguous)
	for what, call := range map[string]Call{
		"a create without a key": c.Create(ctx, Record{LocalType: "order", Payload: []byte(`{"title":"a"}`)}, ""),
		"an update":              c.Update(ctx, Record{LocalType: "order", ExternalID: "d1", Payload: []byte(`{"title":"a"}`)}),
	} {
		require.Equal(t, Permanent, call.Class, what)
		require.False(t, call.Ambiguous, what)
		require.Equal(t, "HTTP 409: external_key site_order_1 is already used by d1", call.Error, what)
	}

	svc := c.svc
	svc.IdempotencyHeader = "" // a provider that ignores such keys: none is sent
	unkeyed := NewHTTP("crm", svc, redact.New(nil), nil).Create(ctx, Record{LocalType: "order", Payload: []byte(`{"title":"a"}`)}, "order-1-create")
	require.Equal(t, Permanent, unkeyed.Class, "no key was sent, so the 409 is not about one")
}

// Reconciliation reads a listing as everything the provider has, and
// re-creates the objects of successful links that it lacks. A page in a
// shape the connector does not read was once taken for one object that
// carries no key, so every link looked lost: it must fail instead.
func TestAListPageItCannotReadFailsInsteadOfReadingAsOneObject(t *testing.T) {
	mine := `{"external_key":"site_order_1","data":{"id":"d1"}}`
	for _, tc := range []struct {
		name   string
		body   string
		items  int // -1: not understood
		cursor string
	}{
		{"items and a cursor", `{"items":[` + mine + `],"next_cursor":"c2"}`, 1, "c2"},
		{"data", `{"data":[` + mine + `,` + mine + `]}`, 2, ""},
		{"an array", `[` + mine + `]`, 1, ""},
		{"an empty last page", `{"items":[]}`, 0, ""},
		{"another wrapper (HubSpot's results)", `{"total":1,"results":[` + mine + `],"next_cursor":"c2"}`, -1, ""},
		{"one object", mine, -1, ""},
		{"a list of ids", `["d1","d2"]`, -1, ""},
		{"an empty body", ``, -1, ""},
		{"not JSON", `<html>deals</html>`, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, call := answering(t, http.StatusOK, tc.body).List(context.Background(), "order", "")
			if tc.items < 0 {
				require.Equal(t, Temporary, call.Class, "an unreadable page fails the listing")
				require.Equal(t, `the list's answer was not understood: expected a list ([…], {"items":[…]} or {"data":[…]})`, call.Error)
				require.Empty(t, page.Items)
				return
			}
			require.Equal(t, OK, call.Class, call.Error)
			require.Len(t, page.Items, tc.items)
			require.Equal(t, tc.cursor, page.NextCursor)
		})
	}
}
