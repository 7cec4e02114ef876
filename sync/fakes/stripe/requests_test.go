package stripe

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAuthenticationAsStripeDocumentsIt(t *testing.T) {
	_, c, _ := setup(t, Options{APIKey: testKey})

	c.key = ""
	a := c.do(http.MethodGet, "/v1/customers", nil)
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Equal(t, "invalid_request_error", a.errField("type"))
	require.Contains(t, a.errField("message"), "did not provide an API key")

	c.key = "sk_test_wrong_key_9876"
	a = c.do(http.MethodGet, "/v1/customers", nil)
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.NotContains(t, string(a.raw), "sk_test_wrong", "the refusal never repeats the key")
	require.Contains(t, a.errField("message"), "****9876")

	c.key = ""
	req, _ := http.NewRequest(http.MethodGet, c.base+"/v1/customers", nil)
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(testKey+":")))
	require.Equal(t, http.StatusOK, c.send(req).status, "basic auth with the key as user name")
	c.key = testKey
	require.Equal(t, http.StatusOK, c.do(http.MethodGet, "/v1/customers", nil).status, "bearer")

	_, anyKey, _ := setup(t, Options{})
	anyKey.key = "sk_live_123"
	require.Equal(t, http.StatusUnauthorized, anyKey.do(http.MethodGet, "/v1/customers", nil).status,
		"without a configured key only test-mode secret keys pass")
	anyKey.key = "sk_test_anything"
	require.Equal(t, http.StatusOK, anyKey.do(http.MethodGet, "/v1/customers", nil).status)
}

func TestBodiesAreFormEncodedWithBrackets(t *testing.T) {
	s, c, _ := setup(t, Options{})

	cus := c.ok(http.MethodPost, "/v1/customers", form("email", "jenny@example.com",
		"metadata[syncdesk_key]", "cust-1", "shipping[address][city]", "Paris", "shipping[name]", "Jenny",
		"preferred_locales[]", "fr", "preferred_locales[]", "en", "balance", "-250"))
	require.Equal(t, map[string]any{"syncdesk_key": "cust-1"}, cus["metadata"])
	require.Equal(t, "Paris", cus["shipping"].(map[string]any)["address"].(map[string]any)["city"])
	require.Equal(t, []any{"fr", "en"}, cus["preferred_locales"])
	require.EqualValues(t, -250, cus["balance"])
	require.Equal(t, 1, s.CountByMetadata(Customer, "syncdesk_key", "cust-1"))

	req, _ := http.NewRequest(http.MethodPost, c.base+"/v1/customers", strings.NewReader(`{"email":"a@b.c"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	a := c.send(req)
	require.Equal(t, http.StatusBadRequest, a.status, "a JSON body is refused")
	require.Contains(t, a.errField("message"), "unsupported Content-Type application/json")
	require.Equal(t, 1, s.Creates(Customer), "nothing was created by the refused request")

	for _, tc := range []struct {
		form        []string
		param, code string
	}{
		{[]string{"bogus", "1"}, "bogus", "parameter_unknown"},
		{[]string{"address[bogus]", "1"}, "address[bogus]", "parameter_unknown"},
		{[]string{"balance", "abc"}, "balance", "parameter_invalid_integer"},
		{[]string{"metadata", "x"}, "metadata", "parameter_invalid_hash"},
		{[]string{"metadata[a][b]", "x"}, "metadata[a]", ""},
		{[]string{"tax_exempt", "sometimes"}, "tax_exempt", ""},
		{[]string{"metadata[" + strings.Repeat("k", 41) + "]", "x"}, "metadata[" + strings.Repeat("k", 41) + "]", ""},
		{[]string{"address]", "x"}, "address]", ""},
	} {
		a := c.do(http.MethodPost, "/v1/customers", form(tc.form...))
		require.Equal(t, http.StatusBadRequest, a.status, "%v: %s", tc.form, a.raw)
		require.Equal(t, "invalid_request_error", a.errField("type"))
		require.Equal(t, tc.param, a.errField("param"), "%v", tc.form)
		if tc.code != "" {
			require.Equal(t, tc.code, a.errField("code"), "%v", tc.form)
		}
	}
	require.Equal(t, 1, s.Creates(Customer))
}

func TestPaymentIntentsRequireAmountAndCurrency(t *testing.T) {
	s, c, _ := setup(t, Options{})
	for _, tc := range []struct {
		form        []string
		param, code string
	}{
		{[]string{"currency", "usd"}, "amount", "parameter_missing"},
		{[]string{"amount", "100"}, "currency", "parameter_missing"},
		{[]string{"amount", "abc", "currency", "usd"}, "amount", "parameter_invalid_integer"},
		{[]string{"amount", "0", "currency", "usd"}, "amount", "parameter_invalid_integer"},
		{[]string{"amount", "100", "currency", "dollars"}, "currency", ""},
		{[]string{"amount", "100", "currency", "usd", "customer", "cus_nobody"}, "customer", "resource_missing"},
	} {
		a := c.do(http.MethodPost, "/v1/payment_intents", form(tc.form...))
		require.Equal(t, http.StatusBadRequest, a.status, "%v: %s", tc.form, a.raw)
		require.Equal(t, tc.param, a.errField("param"), "%v", tc.form)
		if tc.code != "" {
			require.Equal(t, tc.code, a.errField("code"), "%v", tc.form)
		}
	}
	require.Zero(t, s.Creates(PaymentIntent))

	cus := c.ok(http.MethodPost, "/v1/customers", nil)
	pi := c.ok(http.MethodPost, "/v1/payment_intents", form("amount", "2000", "currency", "USD",
		"customer", cus["id"].(string), "metadata[syncdesk_key]", "pay-1"))
	require.EqualValues(t, 2000, pi["amount"])
	require.Equal(t, "usd", pi["currency"], "currencies are lowercase")
	require.Equal(t, "requires_payment_method", pi["status"])
	require.True(t, strings.HasPrefix(pi["id"].(string), "pi_"))
	require.Equal(t, 1, s.CountByMetadata(PaymentIntent, "syncdesk_key", "pay-1"))
}

func TestUpdateLeavesTheRestAndUnsetsMetadata(t *testing.T) {
	_, c, _ := setup(t, Options{})
	cus := c.ok(http.MethodPost, "/v1/customers", form("name", "Jenny", "email", "j@example.com",
		"metadata[a]", "1", "metadata[b]", "2"))
	id := cus["id"].(string)

	up := c.ok(http.MethodPost, "/v1/customers/"+id, form("metadata[a]", "", "metadata[c]", "3", "name", "Jen"))
	require.Equal(t, map[string]any{"b": "2", "c": "3"}, up["metadata"], "an empty value unsets one key")
	require.Equal(t, "Jen", up["name"])
	require.Equal(t, "j@example.com", up["email"], "what is not sent is left as it was")
	require.Equal(t, up, c.ok(http.MethodGet, "/v1/customers/"+id, nil), "retrieve sees the update at once")

	up = c.ok(http.MethodPost, "/v1/customers/"+id, form("metadata", ""))
	require.Equal(t, map[string]any{}, up["metadata"], "metadata= unsets every key")

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		a := c.do(method, "/v1/customers/cus_nobody", nil)
		require.Equal(t, http.StatusNotFound, a.status)
		require.Equal(t, "resource_missing", a.errField("code"))
		require.Equal(t, "No such customer: 'cus_nobody'", a.errField("message"))
	}
}

func TestUnknownRoutesAndCounts(t *testing.T) {
	s, c, _ := setup(t, Options{})
	a := c.do(http.MethodDelete, "/v1/payment_intents/pi_1", nil)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Contains(t, a.errField("message"), "Unrecognized request URL (DELETE: /v1/payment_intents/pi_1)")
	require.Equal(t, http.StatusNotFound, c.do(http.MethodGet, "/v1/charges", nil).status)

	cus := c.ok(http.MethodPost, "/v1/customers", nil)
	c.ok(http.MethodGet, "/v1/customers/"+cus["id"].(string), nil)
	c.ok(http.MethodGet, "/v1/customers/search", form("query", "email:'x@example.com'"))
	c.key = ""
	c.do(http.MethodGet, "/v1/customers", nil)
	require.Equal(t, map[string]int{
		"DELETE (unrecognized)": 1, "GET (unrecognized)": 1, "POST /v1/customers": 1,
		"GET /v1/customers/{id}": 1, "GET /v1/customers/search": 1, "GET /v1/customers": 1,
	}, s.Requests())
}

// A customer is deleted for good (https://docs.stripe.com/api/customers/delete):
// the answer says deleted, the object is gone from retrieve, list and the
// counts, and a second delete is a 404; a payment intent cannot be deleted.
func TestDeleteACustomer(t *testing.T) {
	s, c, _ := setup(t, Options{})
	cus := c.ok(http.MethodPost, "/v1/customers", form("email", "jenny@example.com", "metadata[syncdesk_key]", "cust-1"))
	id := cus["id"].(string)

	gone := c.ok(http.MethodDelete, "/v1/customers/"+id, nil)
	require.Equal(t, map[string]any{"id": id, "object": "customer", "deleted": true}, gone)
	require.Equal(t, http.StatusNotFound, c.do(http.MethodGet, "/v1/customers/"+id, nil).status)
	require.Zero(t, s.CountByMetadata(Customer, "syncdesk_key", "cust-1"))
	again := c.do(http.MethodDelete, "/v1/customers/"+id, nil)
	require.Equal(t, http.StatusNotFound, again.status)
	require.Equal(t, "resource_missing", again.errField("code"))
}
