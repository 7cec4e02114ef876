package mapping

import (
	"math"
	"math/big"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func bigInt(t *testing.T, s string) *big.Int {
	t.Helper()
	b, ok := new(big.Int).SetString(s, 10)
	require.True(t, ok, s)
	return b
}

func TestForm(t *testing.T) {
	cases := []struct {
		name string
		body map[string]any
		want string
		// values is what net/url reads back from the form.
		values url.Values
	}{
		{name: "flat", body: map[string]any{"email": "ana@example.com", "name": "Ana"},
			want:   "email=ana%40example.com&name=Ana",
			values: url.Values{"email": {"ana@example.com"}, "name": {"Ana"}}},
		{name: "nested objects",
			body: map[string]any{"metadata": map[string]any{"syncdesk_key": "k-1", "local_id": "42"},
				"address": map[string]any{"city": "Lyon", "geo": map[string]any{"lat": 45.76}}},
			want: "address[city]=Lyon&address[geo][lat]=45.76&metadata[local_id]=42&metadata[syncdesk_key]=k-1",
			values: url.Values{"address[city]": {"Lyon"}, "address[geo][lat]": {"45.76"},
				"metadata[local_id]": {"42"}, "metadata[syncdesk_key]": {"k-1"}}},
		{name: "lists", body: map[string]any{"expand": []any{"customer", "invoice"},
			"items": []any{map[string]any{"price": "price_1", "quantity": 2}, map[string]any{"price": "price_2"}}},
			want: "expand[0]=customer&expand[1]=invoice&items[0][price]=price_1&items[0][quantity]=2&items[1][price]=price_2",
			values: url.Values{"expand[0]": {"customer"}, "expand[1]": {"invoice"},
				"items[0][price]": {"price_1"}, "items[0][quantity]": {"2"}, "items[1][price]": {"price_2"}}},
		{name: "null, empty object and empty list unset",
			body:   map[string]any{"phone": nil, "metadata": map[string]any{}, "tax_ids": []any{}, "shipping": map[string]any{"name": nil}},
			want:   "metadata=&phone=&shipping[name]=&tax_ids=",
			values: url.Values{"metadata": {""}, "phone": {""}, "shipping[name]": {""}, "tax_ids": {""}}},
		{name: "booleans", body: map[string]any{"confirm": true, "livemode": false},
			want: "confirm=true&livemode=false", values: url.Values{"confirm": {"true"}, "livemode": {"false"}}},
		{name: "numbers without exponent or trailing zero",
			body: map[string]any{"amount": 1999, "float_int": 1999.0, "big": bigInt(t, "123456789012345678901234567890"),
				"large": 1e21, "tiny": 1e-7, "neg": -12.5, "max": math.MaxInt64},
			want: "amount=1999&big=123456789012345678901234567890&float_int=1999&large=1000000000000000000000&max=9223372036854775807&neg=-12.5&tiny=0.0000001",
			values: url.Values{"amount": {"1999"}, "big": {"123456789012345678901234567890"}, "float_int": {"1999"},
				"large": {"1000000000000000000000"}, "max": {"9223372036854775807"}, "neg": {"-12.5"}, "tiny": {"0.0000001"}}},
		{name: "unicode", body: map[string]any{"name": "José Müller 東京 🎉"},
			want:   "name=Jos%C3%A9+M%C3%BCller+%E6%9D%B1%E4%BA%AC+%F0%9F%8E%89",
			values: url.Values{"name": {"José Müller 東京 🎉"}}},
		{name: "special characters in values", body: map[string]any{"description": "a&b=c[d]e+f%g?h#i/j"},
			want:   "description=a%26b%3Dc%5Bd%5De%2Bf%25g%3Fh%23i%2Fj",
			values: url.Values{"description": {"a&b=c[d]e+f%g?h#i/j"}}},
		{name: "special characters in keys", body: map[string]any{"metadata": map[string]any{"a b&c=d": "1", "ü": "2"}},
			want:   "metadata[a+b%26c%3Dd]=1&metadata[%C3%BC]=2", // sorted by the key itself, not its escape
			values: url.Values{"metadata[a b&c=d]": {"1"}, "metadata[ü]": {"2"}}},
		{name: "empty top level", body: map[string]any{}, want: "", values: url.Values{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Form(c.body)
			require.NoError(t, err)
			require.Equal(t, c.want, string(got))
			back, err := url.ParseQuery(string(got))
			require.NoError(t, err, "the form must parse back")
			require.Equal(t, c.values, back)
		})
	}
}

func TestFormIsDeterministic(t *testing.T) {
	body := map[string]any{}
	for _, k := range []string{"z", "a", "m", "b", "y", "c", "x", "d"} {
		body[k] = map[string]any{"q": k, "p": []any{k, k}}
	}
	first, err := Form(body)
	require.NoError(t, err)
	for range 50 { // map iteration order changes from run to run
		again, err := Form(body)
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
}

func TestFormErrors(t *testing.T) {
	cases := []struct {
		name string
		body any
		want string
	}{
		{"list at the top", []any{1, 2}, "a request body is an object of fields; this one is an array"},
		{"string at the top", "x", "this one is a string"},
		{"null at the top", nil, "this one is null"},
		{"bracket in a key", map[string]any{"metadata": map[string]any{"a[b": "1"}},
			`form field metadata: the key "a[b" cannot be written in bracket notation`},
		{"empty key", map[string]any{"": "1"}, `the key "" cannot be written in bracket notation`},
		{"not a number", map[string]any{"amount": math.NaN()}, "form field amount: NaN is not a number a form can carry"},
		{"infinity", map[string]any{"a": []any{math.Inf(1)}}, "form field a[0]: +Inf is not a number a form can carry"},
		{"a Go type gojq never yields", map[string]any{"a": map[string]any{"b": int64(1)}}, "form field a[b]: cannot encode a Go int64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Form(c.body)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestJSON(t *testing.T) {
	got, err := JSON(map[string]any{
		"b": "<a&b>", "a": bigInt(t, "123456789012345678901234567890"), "c": []any{1, 2.5, nil, true},
		"d": map[string]any{"z": 1999.0, "y": "é"},
	})
	require.NoError(t, err)
	require.Equal(t, `{"a":123456789012345678901234567890,"b":"<a&b>","c":[1,2.5,null,true],"d":{"y":"é","z":1999}}`, string(got))

	_, err = JSON([]any{1})
	require.EqualError(t, err, "a request body is an object of fields; this one is an array")
	_, err = JSON(map[string]any{"a": struct{}{}})
	require.ErrorContains(t, err, "encode the body as JSON: invalid type: struct {}")
}

// TestRenderThenForm follows a record from its payload to Stripe's form:
// an id beyond 2^53 must arrive digit for digit.
func TestRenderThenForm(t *testing.T) {
	m, err := Compile(map[string]string{
		"email": ".email", "metadata.syncdesk_key": "$key", "metadata.local_id": ".id",
		"amount": ".total", "description": `"Order \(.id) — \(.note)"`,
	}, "")
	require.NoError(t, err)
	body, err := m.Render([]byte(`{"id":98765432109876543210,"email":"a+b@example.com","total":1999,"note":"a&b"}`), testVars)
	require.NoError(t, err)
	got, err := Form(body)
	require.NoError(t, err)
	require.Equal(t, "amount=1999&description=Order+98765432109876543210+%E2%80%94+a%26b&email=a%2Bb%40example.com"+
		"&metadata[local_id]=98765432109876543210&metadata[syncdesk_key]=sd-customer-42", string(got))
}
