package stripe

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// search runs a customer or payment intent search and returns its ids.
func (c *client) search(path, query string, extra ...string) (map[string]any, []string) {
	c.t.Helper()
	body := c.ok(http.MethodGet, path+"/search", form(append([]string{"query", query}, extra...)...))
	require.Equal(c.t, "search_result", body["object"])
	require.Equal(c.t, path+"/search", body["url"])
	return body, ids(body)
}

func TestSearchLagsBehindWritesButListAndRetrieveDoNot(t *testing.T) {
	_, c, clk := setup(t, Options{SearchLag: 30 * time.Second})
	cus := c.ok(http.MethodPost, "/v1/customers", form("email", "lag@example.com", "metadata[syncdesk_key]", "cust-7"))
	id := cus["id"].(string)

	require.Equal(t, []string{id}, ids(c.ok(http.MethodGet, "/v1/customers", nil)), "list sees it at once")
	require.Equal(t, id, c.ok(http.MethodGet, "/v1/customers/"+id, nil)["id"], "so does retrieve")
	_, found := c.search("/v1/customers", "metadata['syncdesk_key']:'cust-7'")
	require.Empty(t, found, "search does not, yet")
	clk.Advance(29 * time.Second)
	_, found = c.search("/v1/customers", "metadata['syncdesk_key']:'cust-7'")
	require.Empty(t, found)
	clk.Advance(time.Second)
	_, found = c.search("/v1/customers", "metadata['syncdesk_key']:'cust-7'")
	require.Equal(t, []string{id}, found, "after the lag it is searchable")

	c.ok(http.MethodPost, "/v1/customers/"+id, form("metadata[syncdesk_key]", "cust-8"))
	_, found = c.search("/v1/customers", "metadata['syncdesk_key']:'cust-8'")
	require.Empty(t, found, "an update lags too")
	_, found = c.search("/v1/customers", "metadata['syncdesk_key']:'cust-7'")
	require.Equal(t, []string{id}, found, "search still has the old version")
	clk.Advance(30 * time.Second)
	_, found = c.search("/v1/customers", "metadata['syncdesk_key']:'cust-8'")
	require.Equal(t, []string{id}, found)
	_, found = c.search("/v1/customers", "metadata['syncdesk_key']:'cust-7'")
	require.Empty(t, found)
}

func TestSearchLagDefaultsToAMinute(t *testing.T) {
	_, c, clk := setup(t, Options{})
	pi := c.ok(http.MethodPost, "/v1/payment_intents", form("amount", "100", "currency", "usd", "metadata[k]", "v"))
	clk.Advance(DefaultSearchLag - time.Second)
	_, found := c.search("/v1/payment_intents", "metadata['k']:'v'")
	require.Empty(t, found)
	clk.Advance(time.Second)
	_, found = c.search("/v1/payment_intents", "metadata['k']:'v'")
	require.Equal(t, []string{pi["id"].(string)}, found)
}

func TestSearchQueryLanguage(t *testing.T) {
	_, c, _ := setup(t, Options{SearchLag: -1})
	jenny := c.ok(http.MethodPost, "/v1/customers", form("email", "Jenny.Rosen@example.com", "name", "Jenny Rosen",
		"metadata[tier]", "gold"))["id"].(string)
	amy := c.ok(http.MethodPost, "/v1/customers", form("email", "amy@rocketrides.io", "name", "Amy",
		"metadata[tier]", "Gold"))["id"].(string)
	big := c.ok(http.MethodPost, "/v1/payment_intents", form("amount", "5000", "currency", "usd", "customer", amy))["id"].(string)
	small := c.ok(http.MethodPost, "/v1/payment_intents", form("amount", "999", "currency", "eur"))["id"].(string)

	for _, tc := range []struct {
		path, query string
		want        []string
	}{
		{"/v1/customers", `email:"jenny.rosen@example.com"`, []string{jenny}},
		{"/v1/customers", `email:'amy@rocketrides.io'`, []string{amy}},
		{"/v1/customers", `metadata["tier"]:"gold"`, []string{jenny}},
		{"/v1/customers", `-metadata['tier']:'gold'`, []string{amy}},
		{"/v1/customers", `name~"ose"`, []string{jenny}},
		{"/v1/customers", `email~"example" AND metadata['tier']:'gold'`, []string{jenny}},
		{"/v1/customers", `email~"example" metadata['tier']:'Gold'`, nil},
		{"/v1/customers", `email:'nobody@example.com' OR name:'amy'`, []string{amy}},
		{"/v1/customers", `phone:null`, []string{amy, jenny}},
		{"/v1/payment_intents", `amount>1000`, []string{big}},
		{"/v1/payment_intents", `amount<=999 currency:'eur'`, []string{small}},
		{"/v1/payment_intents", `-currency:'usd'`, []string{small}},
		{"/v1/payment_intents", `customer:'` + amy + `'`, []string{big}},
		{"/v1/payment_intents", `status:'requires_payment_method' AND amount:5000`, []string{big}},
	} {
		_, found := c.search(tc.path, tc.query)
		if tc.want == nil {
			tc.want = []string{}
		}
		require.Equal(t, tc.want, found, "%s %s", tc.path, tc.query)
	}
}

func TestSearchRefusesBadQueries(t *testing.T) {
	_, c, _ := setup(t, Options{SearchLag: -1})
	for _, q := range []string{
		``, `email`, `email:`, `bogus:'x'`, `email:'a' AND name:'b' OR phone:'c'`, `name~'ab'`,
		`email>5`, `amount:'many'`, `metadata:'x'`, `email:'unclosed`,
		strings.Repeat(`email:'x@example.com' `, 11), // at most 10 clauses
	} {
		a := c.do(http.MethodGet, "/v1/customers/search", form("query", q))
		require.Equal(t, http.StatusBadRequest, a.status, "%q: %s", q, a.raw)
		require.Equal(t, "invalid_request_error", a.errField("type"))
	}
	a := c.do(http.MethodGet, "/v1/customers/search", nil)
	require.Equal(t, "parameter_missing", a.errField("code"), "query is required")
	a = c.do(http.MethodGet, "/v1/customers/search", form("query", "email:'a'", "page", "nonsense"))
	require.Equal(t, "page", a.errField("param"))
}

func TestSearchPagesWithNextPage(t *testing.T) {
	_, c, _ := setup(t, Options{SearchLag: -1})
	want := map[string]bool{}
	for i := range 25 {
		id := c.ok(http.MethodPost, "/v1/customers", form("metadata[batch]", "b1", "name", fmt.Sprint(i)))["id"].(string)
		want[id] = true
		c.ok(http.MethodPost, "/v1/customers", form("metadata[batch]", "b2"))
	}
	seen := map[string]bool{}
	var pages int
	extra := []string{"limit", "10", "expand[]", "total_count"}
	for {
		body, found := c.search("/v1/customers", "metadata['batch']:'b1'", extra...)
		require.EqualValues(t, 25, body["total_count"])
		pages++
		for _, id := range found {
			require.False(t, seen[id], "%s on two pages", id)
			seen[id] = true
		}
		if body["has_more"] != true {
			require.Nil(t, body["next_page"])
			break
		}
		next, ok := body["next_page"].(string)
		require.True(t, ok, "has_more comes with next_page")
		extra = []string{"limit", "10", "page", next, "expand[]", "total_count"}
	}
	require.Equal(t, want, seen)
	require.Equal(t, 3, pages)
	body, _ := c.search("/v1/customers", "metadata['batch']:'b1'")
	require.NotContains(t, body, "total_count", "only when expanded")
}
