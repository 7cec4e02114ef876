package stripe

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/fakes/stripemock"
)

// The fake is held to stripe-mock, which checks requests against Stripe's
// published OpenAPI definition: each canonical request must be accepted by
// stripe-mock (2xx) and answered by the fake with the same status and the
// same shape; each malformed one must be refused by both alike. stripe-mock
// keeps no state, so only statuses and shapes are compared, never values.

// step is one request; {name} in its path or values is the id an earlier
// step saved under name, on the same server.
type step struct {
	method, path string
	form         []string
	key          string // Idempotency-Key
	save         string
}

// canonical are the requests the Stripe preset sends: create, update,
// retrieve, list and search, for customers and payment intents.
var canonical = []step{
	{method: "POST", path: "/v1/customers", key: "cust-1-create", save: "cus", form: []string{
		"email", "jenny@example.com", "name", "Jenny Rosen", "metadata[syncdesk_key]", "cust-1",
		"address[line1]", "1 Main St", "address[city]", "Paris", "address[country]", "FR"}},
	{method: "POST", path: "/v1/customers", key: "cust-2-create", save: "cus2", form: []string{
		"email", "amy@example.com", "metadata[syncdesk_key]", "cust-2", "metadata[local_id]", "42", "phone", "+33100000000"}},
	{method: "POST", path: "/v1/customers/{cus}", key: "cust-1-update-1", form: []string{
		"name", "Jenny R.", "description", "VIP", "metadata[syncdesk_key]", "cust-1", "metadata[local_id]", "41"}},
	{method: "GET", path: "/v1/customers/{cus}"},
	{method: "GET", path: "/v1/customers", form: []string{"limit", "3"}},
	{method: "GET", path: "/v1/customers", form: []string{"limit", "1", "starting_after", "{cus2}"}},
	{method: "GET", path: "/v1/customers/search", form: []string{"query", "metadata['syncdesk_key']:'cust-1'"}},
	{method: "GET", path: "/v1/customers/search", form: []string{"query", "email:'amy@example.com'", "limit", "10"}},
	{method: "POST", path: "/v1/payment_intents", key: "pay-1-create", save: "pi", form: []string{
		"amount", "2000", "currency", "usd", "customer", "{cus}", "description", "Order 1",
		"metadata[syncdesk_key]", "pay-1", "automatic_payment_methods[enabled]", "true"}},
	{method: "POST", path: "/v1/payment_intents", key: "pay-2-create", save: "pi2", form: []string{
		"amount", "999", "currency", "eur", "metadata[syncdesk_key]", "pay-2", "receipt_email", "amy@example.com"}},
	{method: "POST", path: "/v1/payment_intents/{pi}", key: "pay-1-update-1", form: []string{
		"amount", "2500", "description", "Order 1, amended", "metadata[syncdesk_key]", "pay-1"}},
	{method: "GET", path: "/v1/payment_intents/{pi}"},
	{method: "GET", path: "/v1/payment_intents", form: []string{"limit", "10", "customer", "{cus}"}},
	{method: "GET", path: "/v1/payment_intents", form: []string{"limit", "1", "starting_after", "{pi2}"}},
	{method: "GET", path: "/v1/payment_intents/search", form: []string{"query", "metadata['syncdesk_key']:'pay-1'"}},
	{method: "GET", path: "/v1/payment_intents/search", form: []string{"query", "currency:'eur' AND amount>500", "limit", "5"}},
}

// malformed are requests Stripe's definition does not allow.
var malformed = []step{
	{method: "POST", path: "/v1/customers", form: []string{"no_such_param", "1"}},
	{method: "POST", path: "/v1/customers", form: []string{"balance", "lots"}},
	{method: "POST", path: "/v1/customers", form: []string{"metadata", "not-a-hash"}},
	{method: "POST", path: "/v1/customers", form: []string{"metadata[a][b]", "nested"}},
	{method: "POST", path: "/v1/customers", form: []string{"tax_exempt", "sometimes"}},
	{method: "POST", path: "/v1/customers/{cus}", form: []string{"no_such_param", "1"}},
	{method: "POST", path: "/v1/payment_intents", form: []string{"currency", "usd"}},
	{method: "POST", path: "/v1/payment_intents", form: []string{"amount", "2000"}},
	{method: "POST", path: "/v1/payment_intents", form: []string{"amount", "twenty", "currency", "usd"}},
	{method: "GET", path: "/v1/customers", form: []string{"no_such_param", "1"}},
	{method: "GET", path: "/v1/payment_intents", form: []string{"limit", "ten"}},
	{method: "GET", path: "/v1/customers/search"},
}

// run sends a step to one server, filling in and saving ids.
func (c *client) run(st step, saved map[string]string) answer {
	c.t.Helper()
	fill := func(s string) string {
		for name, id := range saved {
			s = strings.ReplaceAll(s, "{"+name+"}", id)
		}
		return s
	}
	values := make([]string, len(st.form))
	for i, v := range st.form {
		values[i] = fill(v)
	}
	var headers []string
	if st.key != "" {
		headers = []string{"Idempotency-Key", st.key}
	}
	a := c.do(st.method, fill(st.path), form(values...), headers...)
	if id, ok := a.body["id"].(string); ok && st.save != "" {
		saved[st.save] = id
	}
	return a
}

func TestFakeAnswersWhatStripeMockAccepts(t *testing.T) {
	mock := &client{t: t, base: stripemock.Start(t).URL, key: stripemock.APIKey}
	fakeSrv := httptest.NewServer(New(Options{SearchLag: -1})) // shapes, not lag, are compared here
	t.Cleanup(fakeSrv.Close)
	fake := &client{t: t, base: fakeSrv.URL, key: testKey}
	mockIDs, fakeIDs := map[string]string{}, map[string]string{}

	shapes := map[string]int{}
	for _, st := range canonical {
		m, f := mock.run(st, mockIDs), fake.run(st, fakeIDs)
		name := st.method + " " + st.path
		require.True(t, m.status >= 200 && m.status < 300, "stripe-mock refused %s %v: %s", name, st.form, m.raw)
		require.Equal(t, m.status, f.status, "%s %v: the fake answered %s", name, st.form, f.raw)
		sameShape(t, name, m.body, f.body, shapes)
	}
	require.GreaterOrEqual(t, shapes["customer"], 6, "customers compared")
	require.GreaterOrEqual(t, shapes["payment_intent"], 6, "payment intents compared")

	for _, st := range malformed {
		m, f := mock.run(st, mockIDs), fake.run(st, fakeIDs)
		name := st.method + " " + st.path
		require.Equal(t, http.StatusBadRequest, m.status, "stripe-mock accepted %s %v: %s", name, st.form, m.raw)
		require.Equal(t, m.status, f.status, "%s %v: the fake answered %s", name, st.form, f.raw)
		require.Equal(t, m.errField("type"), f.errField("type"), "%s %v", name, st.form)
	}

	for _, c := range []*client{mock, fake} {
		req, _ := http.NewRequest(http.MethodPost, c.base+"/v1/customers", strings.NewReader(`{"email":"a@example.com"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.key)
		a := c.send(req)
		require.Equal(t, http.StatusBadRequest, a.status, "%s refuses a JSON body", c.base)
		require.Equal(t, "invalid_request_error", a.errField("type"))
		req, _ = http.NewRequest(http.MethodPost, c.base+"/v1/customers", strings.NewReader("email=a@example.com"))
		req.Header.Set("Authorization", "Bearer "+c.key)
		require.Equal(t, http.StatusBadRequest, c.send(req).status, "%s refuses a body of no Content-Type", c.base)
		c.key = ""
		require.Equal(t, http.StatusUnauthorized, c.do(http.MethodGet, "/v1/customers", nil).status, "%s wants a key", c.base)
	}
}

// sameShape requires the fake's answer to have the top-level keys of
// stripe-mock's, for an object and for the objects of a list or search.
// A search_result differs in two documented keys: Stripe sends next_page
// (nullable, which stripe-mock's fixture leaves out) and total_count only
// when expand[]=total_count asks for it (which the fixture always has), per
// https://docs.stripe.com/api/pagination/search.
func sameShape(t *testing.T, name string, mock, fake map[string]any, counted map[string]int) {
	t.Helper()
	mk, fk := keysOf(mock), keysOf(fake)
	if mock["object"] == "search_result" {
		mk, fk = without(mk, "next_page", "total_count"), without(fk, "next_page", "total_count")
	}
	require.Equal(t, mk, fk, "%s: top-level keys of stripe-mock's answer, then the fake's", name)
	if mock["object"] != "list" && mock["object"] != "search_result" {
		counted[mock["object"].(string)]++
		return
	}
	require.Equal(t, mock["url"], fake["url"], name)
	md, _ := mock["data"].([]any)
	fd, _ := fake["data"].([]any)
	require.NotEmpty(t, fd, "%s: the fake's canonical run finds something to compare", name)
	require.NotEmpty(t, md, "%s: stripe-mock's fixture has an item", name)
	for _, item := range fd {
		sameShape(t, name+" data[]", md[0].(map[string]any), item.(map[string]any), counted)
	}
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func without(keys []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(drop, k) })
}
