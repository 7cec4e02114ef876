package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bundle is what a test needs: a provider behind a real HTTP server and a
// client for it.
type bundle struct {
	p      *Provider
	srv    *httptest.Server
	client *http.Client
}

func setup(t *testing.T, newProvider func(Options) *Provider, opts Options) *bundle {
	t.Helper()
	p := newProvider(opts)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return &bundle{p: p, srv: srv, client: srv.Client()}
}

// reply is a decoded answer.
type reply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// send makes one request; body may be a string (sent as is) or anything to
// encode as JSON. It fails the test on a transport error.
func (b *bundle) send(t *testing.T, method, path string, body any, header ...string) reply {
	t.Helper()
	resp, err := b.try(method, path, body, header...)
	require.NoError(t, err, "%s %s", method, path)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &r.body), "body %q", raw)
	}
	return r
}

// try makes one request and returns what the transport says, error included.
func (b *bundle) try(method, path string, body any, header ...string) (*http.Response, error) {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, rd)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.client.Do(req)
}

func deal(key string) map[string]any {
	return map[string]any{"title": "Order " + key, "external_key": key, "total": 1200}
}

func items(t *testing.T, r reply) []any {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "list: %s", r.raw)
	list, ok := r.body["items"].([]any)
	require.True(t, ok, "items must be a list: %s", r.raw)
	return list
}

func TestCRMCreatesLooksUpUpdatesAndDeletes(t *testing.T) {
	b := setup(t, NewCRM, Options{})

	created := b.send(t, "POST", "/deals", deal("site_order_1"))
	require.Equal(t, http.StatusCreated, created.status, "%s", created.raw)
	require.Equal(t, "deal_1", created.body["id"])
	require.Equal(t, "application/json", created.header.Get("Content-Type"))

	found := items(t, b.send(t, "GET", "/deals?external_key=site_order_1", nil))
	require.Len(t, found, 1)
	require.Equal(t, created.body, found[0])
	require.Empty(t, items(t, b.send(t, "GET", "/deals?external_key=nope", nil)))

	// PUT is desired state: fields not sent are gone, the id stays.
	updated := b.send(t, "PUT", "/deals/deal_1", map[string]any{"title": "Paid", "external_key": "site_order_1", "status": "paid", "id": "deal_77"})
	require.Equal(t, http.StatusOK, updated.status, "%s", updated.raw)
	require.Equal(t, map[string]any{"id": "deal_1", "title": "Paid", "external_key": "site_order_1", "status": "paid"}, updated.body)
	require.Equal(t, updated.body, b.send(t, "GET", "/deals/deal_1", nil).body)

	missing := b.send(t, "PUT", "/deals/deal_9", deal("x"))
	require.Equal(t, http.StatusNotFound, missing.status)
	require.Equal(t, "no deal deal_9", missing.body["error"])

	require.Equal(t, http.StatusNoContent, b.send(t, "DELETE", "/deals/deal_1", nil).status)
	require.Equal(t, http.StatusNotFound, b.send(t, "GET", "/deals/deal_1", nil).status)
	require.Equal(t, http.StatusNotFound, b.send(t, "DELETE", "/deals/deal_1", nil).status)
	require.Equal(t, 1, b.p.Requests().Creates)
	require.Equal(t, 1, b.p.Requests().Updates)
}

// The CRM ignores Idempotency-Key: a repeated POST is a duplicate. That is
// what the sync engine must protect against by looking up first.
func TestCRMDuplicatesOnRepeatedPost(t *testing.T) {
	b := setup(t, NewCRM, Options{})
	for range 2 {
		r := b.send(t, "POST", "/deals", deal("site_order_7"), "Idempotency-Key", "order-7-create")
		require.Equal(t, http.StatusCreated, r.status)
	}
	require.Equal(t, 2, b.p.CountByKey("site_order_7"))
	found := items(t, b.send(t, "GET", "/deals?external_key=site_order_7", nil))
	require.Equal(t, []any{"deal_1", "deal_2"}, []any{found[0].(map[string]any)["id"], found[1].(map[string]any)["id"]})
}

func TestValidationAndRequestErrors(t *testing.T) {
	crm := setup(t, NewCRM, Options{})
	pay := setup(t, NewPayments, Options{})
	tests := []struct {
		name   string
		b      *bundle
		method string
		path   string
		body   any
		status int
		err    string
	}{
		{"no title", crm, "POST", "/deals", map[string]any{"title": " "}, 422, "title is required"},
		{"put no title", crm, "PUT", "/deals/deal_1", map[string]any{}, 422, "title is required"},
		{"fractional amount", pay, "POST", "/payments", map[string]any{"amount": 10.5, "currency": "EUR"}, 422, "amount must be a positive integer (minor units)"},
		{"zero amount", pay, "POST", "/payments", map[string]any{"amount": 0, "currency": "EUR"}, 422, "amount must be a positive integer (minor units)"},
		{"amount as string", pay, "POST", "/payments", map[string]any{"amount": "10", "currency": "EUR"}, 422, "amount must be a positive integer (minor units)"},
		{"bad currency", pay, "POST", "/payments", map[string]any{"amount": 10, "currency": "EU"}, 422, "currency must be a 3-letter code"},
		{"bad JSON", crm, "POST", "/deals", `{"title":`, 400, ""},
		{"not an object", crm, "POST", "/deals", `[1]`, 400, ""},
		{"null", crm, "POST", "/deals", `null`, 400, "body must be a JSON object"},
		{"too big", crm, "POST", "/deals", `{"title":"` + strings.Repeat("x", MaxBody) + `"}`, 413, "body larger than 1 MiB"},
		{"unknown path", crm, "GET", "/contacts", nil, 404, "no such path /contacts"},
		{"nested path", crm, "GET", "/deals/deal_1/notes", nil, 404, ""},
		{"wrong method", crm, "PATCH", "/deals/deal_1", nil, 405, "method PATCH not allowed"},
		{"payments lookup", pay, "GET", "/payments?external_key=k", nil, 400, "lookup by external_key is not supported"},
		{"bad cursor", crm, "GET", "/deals?cursor=pay_3", nil, 400, `invalid cursor "pay_3"`},
		{"bad limit", crm, "GET", "/deals?limit=0", nil, 400, `invalid limit "0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.b.send(t, tt.method, tt.path, tt.body)
			require.Equal(t, tt.status, r.status, "%s", r.raw)
			require.Equal(t, "application/json", r.header.Get("Content-Type"))
			require.NotEmpty(t, r.body["error"])
			if tt.err != "" {
				require.Equal(t, tt.err, r.body["error"])
			}
		})
	}
	require.Empty(t, crm.p.Objects())
	require.Empty(t, pay.p.Objects())
}

func TestListPagesInIDOrder(t *testing.T) {
	b := setup(t, NewPayments, Options{})
	for i := range 250 {
		b.p.Insert(map[string]any{"amount": i + 1, "currency": "EUR"})
	}
	require.True(t, b.p.Delete("pay_150"), "a deletion must neither skip nor repeat")

	var ids []any
	cursor, pages := "", 0
	for {
		r := b.send(t, "GET", "/payments?limit=100&cursor="+cursor, nil)
		for _, it := range items(t, r) {
			ids = append(ids, it.(map[string]any)["id"])
		}
		pages++
		next, _ := r.body["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, 3, pages)
	require.Len(t, ids, 249)
	require.Equal(t, []any{"pay_1", "pay_2"}, ids[:2], "numeric order: pay_10 after pay_9")
	require.Equal(t, "pay_10", ids[9])
	require.Equal(t, "pay_250", ids[248])

	require.Len(t, items(t, b.send(t, "GET", "/payments", nil)), 100, "default limit")
	require.Len(t, items(t, b.send(t, "GET", "/payments?limit=5000", nil)), 249, "limit is capped, not refused")
	last := b.send(t, "GET", "/payments?cursor=pay_250", nil)
	require.Empty(t, items(t, last))
	require.NotContains(t, last.body, "next_cursor")
}

func TestDriftHelpers(t *testing.T) {
	b := setup(t, NewCRM, Options{})
	id := b.p.Insert(map[string]any{"title": "Unlinked", "external_key": "site_order_3", "total": 5, "id": "ignored"})
	require.Equal(t, "deal_1", id)
	dup := b.p.Insert(map[string]any{"title": "Duplicate", "external_key": "site_order_3"})
	require.Equal(t, 2, b.p.CountByKey("site_order_3"))

	require.True(t, b.p.SetField(id, "total", 7))
	require.False(t, b.p.SetField(id, "id", "deal_9"))
	require.False(t, b.p.SetField("deal_99", "total", 1))
	got := b.send(t, "GET", "/deals/"+id, nil)
	require.Equal(t, float64(7), got.body["total"], "values are stored as they would arrive over HTTP")

	objs := b.p.Objects()
	objs[0]["title"] = "changed by the caller"
	require.Equal(t, "Unlinked", b.p.Objects()[0]["title"], "Objects returns a copy")

	require.True(t, b.p.Delete(dup))
	require.False(t, b.p.Delete(dup))
	require.Equal(t, 1, b.p.CountByKey("site_order_3"))
	require.Equal(t, 0, b.p.Requests().Creates, "Insert is not a create")
}

// Thirty clients on thirty keys never overlap on one key; thirty on one key do.
func TestMaxConcurrentPerKey(t *testing.T) {
	hammer := func(b *bundle, key func(i int) string) {
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() {
				r := b.send(t, "POST", "/deals", deal(key(i)))
				require.Equal(t, http.StatusCreated, r.status)
			})
		}
		wg.Wait()
	}
	apart := setup(t, NewCRM, Options{Latency: 50 * time.Millisecond})
	hammer(apart, func(i int) string { return fmt.Sprintf("site_order_%d", i) })
	require.Equal(t, 1, apart.p.MaxConcurrentPerKey())
	require.Len(t, apart.p.Objects(), 30)

	together := setup(t, NewCRM, Options{Latency: 50 * time.Millisecond})
	hammer(together, func(int) string { return "site_order_1" })
	require.Greater(t, together.p.MaxConcurrentPerKey(), 1)
	require.Equal(t, 30, together.p.CountByKey("site_order_1"))

}

// A PUT by id counts under the stored object's key, whatever its body says.
func TestMaxConcurrentPerKeyCountsPutByStoredKey(t *testing.T) {
	b := setup(t, NewCRM, Options{})
	id := b.p.Insert(deal("site_order_1"))
	b.p.Script(Hang())
	slow := &http.Client{Timeout: 300 * time.Millisecond}
	done := make(chan error)
	go func() {
		req, _ := http.NewRequest("PUT", b.srv.URL+"/deals/"+id, strings.NewReader(`{"title":"a","external_key":"x1"}`))
		_, err := slow.Do(req)
		done <- err
	}()
	require.Eventually(t, func() bool { return b.p.Requests().Faults[FaultHang] == 1 }, 2*time.Second, 5*time.Millisecond)
	r := b.send(t, "PUT", "/deals/"+id, map[string]any{"title": "b", "external_key": "x2"})
	require.Equal(t, http.StatusOK, r.status)
	require.Error(t, <-done, "the hung PUT gets no answer")
	require.Equal(t, 2, b.p.MaxConcurrentPerKey())
}
