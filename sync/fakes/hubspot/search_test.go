package hubspot

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// eq is a search body with one EQ filter.
func eq(prop, value string) map[string]any {
	return map[string]any{"filterGroups": []any{map[string]any{"filters": []any{
		map[string]any{"propertyName": prop, "operator": "EQ", "value": value},
	}}}}
}

// Search sees a create only SearchLag after it, and an update's new values
// only SearchLag after the update, while reads by id, by idProperty and
// lists see both at once.
func TestSearchLagsBehindReads(t *testing.T) {
	lag := 10 * time.Second
	b := setup(t, Options{SearchLag: lag, SearchLimit: Limit{Max: 100, Window: time.Second}})
	created := b.call(t, http.MethodPost, "/crm/v3/objects/contacts", props("syncdesk_key", "k-1", "firstname", "Ada"))
	require.Equal(t, http.StatusCreated, created.status)
	id := created.body["id"].(string)

	hidden := b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", eq("syncdesk_key", "k-1"))
	require.Equal(t, http.StatusOK, hidden.status, hidden.raw)
	require.Equal(t, float64(0), hidden.body["total"])
	require.Empty(t, hidden.ids())
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/crm/v3/objects/contacts/k-1?idProperty=syncdesk_key", nil).status)
	require.Equal(t, []string{id}, b.call(t, http.MethodGet, "/crm/v3/objects/contacts", nil).ids())

	b.clock.Advance(lag - time.Millisecond)
	require.Equal(t, float64(0), b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", eq("syncdesk_key", "k-1")).body["total"])
	b.clock.Advance(time.Millisecond)
	found := b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", eq("syncdesk_key", "k-1"))
	require.Equal(t, float64(1), found.body["total"])
	require.Equal(t, []string{id}, found.ids())

	upd := b.call(t, http.MethodPatch, "/crm/v3/objects/contacts/"+id, props("firstname", "Grace"))
	require.Equal(t, http.StatusOK, upd.status)
	require.Equal(t, "Grace", b.call(t, http.MethodGet, "/crm/v3/objects/contacts/"+id, nil).prop("firstname"))
	stale := b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", eq("firstname", "Ada"))
	require.Equal(t, []string{id}, stale.ids(), "search still has the old value")
	require.Empty(t, b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", eq("firstname", "Grace")).ids())

	b.clock.Advance(lag)
	require.Empty(t, b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", eq("firstname", "Ada")).ids())
	fresh := b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", eq("firstname", "Grace"))
	require.Equal(t, []string{id}, fresh.ids())
	require.Equal(t, "Grace", fresh.body["results"].([]any)[0].(map[string]any)["properties"].(map[string]any)["firstname"])
}

// Filter groups are ORed, filters in a group ANDed; sorts order the
// results; properties limits what each result carries.
func TestSearchFiltersAndSorts(t *testing.T) {
	b := setup(t, Options{SearchLimit: Limit{Max: 100, Window: time.Second}})
	ids := map[string]string{}
	for _, d := range [][]string{{"a", "300", "won"}, {"b", "100", "won"}, {"c", "200", "lost"}, {"d", "", "won"}} {
		a := b.call(t, http.MethodPost, "/crm/v3/objects/deals", props("dealname", d[0], "amount", d[1], "dealstage", d[2]))
		require.Equal(t, http.StatusCreated, a.status, a.raw)
		ids[d[0]] = a.body["id"].(string)
	}
	names := func(body map[string]any) []string {
		a := b.call(t, http.MethodPost, "/crm/v3/objects/deals/search", body)
		require.Equal(t, http.StatusOK, a.status, a.raw)
		var out []string
		for _, r := range a.body["results"].([]any) {
			out = append(out, r.(map[string]any)["properties"].(map[string]any)["dealname"].(string))
		}
		return out
	}
	filters := func(groups ...[]map[string]any) map[string]any {
		var g []any
		for _, fs := range groups {
			g = append(g, map[string]any{"filters": fs})
		}
		return map[string]any{"filterGroups": g}
	}
	f := func(prop, op string, v any) map[string]any {
		return map[string]any{"propertyName": prop, "operator": op, "value": v}
	}

	require.Equal(t, []string{"a", "b", "d"}, names(eq("dealstage", "won")))
	require.Equal(t, []string{"a", "d"}, names(filters([]map[string]any{f("dealstage", "EQ", "won"), f("dealname", "NEQ", "b")})))
	require.Equal(t, []string{"b", "c"}, names(filters([]map[string]any{f("dealname", "EQ", "b")}, []map[string]any{f("dealstage", "EQ", "lost")})))
	require.Equal(t, []string{"d"}, names(filters([]map[string]any{{"propertyName": "amount", "operator": "NOT_HAS_PROPERTY"}})))
	require.Equal(t, []string{"a", "c"}, names(filters([]map[string]any{{"propertyName": "dealname", "operator": "IN", "values": []string{"a", "c"}}})))
	require.Equal(t, []string{"b"}, names(filters([]map[string]any{f("amount", "EQ", 100)})), "a number matches its text")
	require.Equal(t, []string{"b"}, names(filters([]map[string]any{f("hs_object_id", "EQ", ids["b"])})))

	byAmount := map[string]any{"sorts": []any{map[string]any{"propertyName": "amount", "direction": "DESCENDING"}}}
	require.Equal(t, []string{"a", "c", "b", "d"}, names(byAmount), "numbers sort as numbers")
	require.Equal(t, []string{"d", "b", "c", "a"}, names(map[string]any{"sorts": []any{"amount"}}))

	some := b.call(t, http.MethodPost, "/crm/v3/objects/deals/search", map[string]any{"properties": []string{"amount"}, "limit": 1})
	p := some.body["results"].([]any)[0].(map[string]any)["properties"].(map[string]any)
	require.Equal(t, "300", p["amount"])
	require.NotContains(t, p, "dealname")

	for name, body := range map[string]any{
		"unknown operator": filters([]map[string]any{f("dealname", "SOUNDS_LIKE", "a")}),
		"unknown property": eq("colour", "teal"),
		"limit too big":    map[string]any{"limit": 201},
		"bad after":        map[string]any{"after": "x"},
		"bad JSON":         `{"filterGroups": [`,
	} {
		a := b.call(t, http.MethodPost, "/crm/v3/objects/deals/search", body)
		require.Equal(t, http.StatusBadRequest, a.status, name)
		require.Equal(t, "VALIDATION_ERROR", a.body["category"], name)
	}
}

// Paging a list, and a search, to the end returns every object once, in id
// order, and the last page has no paging.
func TestPagingToTheEnd(t *testing.T) {
	b := setup(t, Options{Limit: Limit{Max: 1000, Window: 10 * time.Second}, SearchLimit: Limit{Max: 1000, Window: time.Second}})
	var want []string
	for i := range 137 {
		a := b.call(t, http.MethodPost, "/crm/v3/objects/companies", props("name", fmt.Sprintf("c%03d", i), "city", "Oslo"))
		require.Equal(t, http.StatusCreated, a.status)
		want = append(want, a.body["id"].(string))
	}
	require.Equal(t, http.StatusCreated, b.call(t, http.MethodPost, "/crm/v3/objects/companies", props("name", "elsewhere", "city", "Rome")).status)
	want = append(want, b.fake.Objects("companies")[137].ID)

	var got []string
	path := "/crm/v3/objects/companies?limit=10&properties=name"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 20, "paging must end")
		a := b.call(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, a.status, a.raw)
		got = append(got, a.ids()...)
		after := a.after()
		if after == "" {
			require.Len(t, a.ids(), 8, "the last page")
			break
		}
		link := a.body["paging"].(map[string]any)["next"].(map[string]any)["link"].(string)
		u, err := url.Parse(link)
		require.NoError(t, err)
		require.Equal(t, after, u.Query().Get("after"))
		require.Equal(t, "name", u.Query().Get("properties"), "the link keeps the request's other parameters")
		path = u.RequestURI()
	}
	require.Equal(t, want, got)

	var found []string
	var total any
	for after := ""; ; {
		body := eq("city", "Oslo")
		body["limit"], body["after"] = 50, after
		a := b.call(t, http.MethodPost, "/crm/v3/objects/companies/search", body)
		require.Equal(t, http.StatusOK, a.status, a.raw)
		total = a.body["total"]
		found = append(found, a.ids()...)
		if after = a.after(); after == "" {
			break
		}
	}
	require.Equal(t, float64(137), total)
	require.Equal(t, want[:137], found)
	require.True(t, slices.IsSortedFunc(found, func(a, b string) int { return compare(a, b) }))

	bad := b.call(t, http.MethodGet, "/crm/v3/objects/companies?limit=101", nil)
	require.Equal(t, http.StatusBadRequest, bad.status)
	require.True(t, strings.Contains(bad.body["message"].(string), "100"))
}
