package connector

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodedWithKey is what WithKey did before it spliced: decode the payload
// into a map, set the key, encode it again. The splice must give the same
// bytes for every canonical payload.
func decodedWithKey(payload []byte, field, key string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil || m == nil {
		return nil, err
	}
	k, _ := json.Marshal(key)
	m[field] = k
	return json.Marshal(m)
}

// canonicalOf is a payload as records store it: decoded and encoded again,
// keys sorted (models.CanonicalPayload).
func canonicalOf(t testing.TB, raw string) []byte {
	var v map[string]any
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || v == nil {
		t.Skip("not a JSON object")
	}
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out
}

var withKeyCases = []struct{ payload, field string }{
	{`{}`, "external_key"},
	{`{"amount":100}`, "external_key"},                                    // ours sorts last
	{`{"zeta":1}`, "external_key"},                                        // ours sorts first
	{`{"amount":1,"zeta":{"a":[1,2,{"b":"}"}]}}`, "external_key"},         // between, a brace in a string after
	{`{"amount":1,"external_key":"old","zeta":2}`, "external_key"},        // set over an old value
	{`{"external_key":{"nested":"x"},"zeta":2}`, "external_key"},          // an object value replaced
	{`{"a":"\u003cb\u003e","é":"ü","external_key":null}`, "external_key"}, // escapes, a null replaced
	{`{"a<b":1,"a":2}`, "a<c"},                                            // a field the encoder escapes
	{`{"n":1.50,"big":12345678901234567890}`, "external_key"},             // numbers as written
	{`{"x":"say \"hi\"","y":[]}`, "x\"y"},
}

func TestWithKeySplicesAsTheDecodedRoundTripEncoded(t *testing.T) {
	for _, c := range withKeyCases {
		payload := canonicalOf(t, c.payload)
		got, err := WithKey(payload, c.field, `site_order_1 <&> "q"`)
		require.NoError(t, err, c.payload)
		want, err := decodedWithKey(payload, c.field, `site_order_1 <&> "q"`)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), c.payload)
		require.True(t, json.Valid(got), string(got))
	}
}

func TestWithKeyRefusesWhatIsNoObject(t *testing.T) {
	for _, p := range []string{``, `null`, `[]`, `"x"`, `1`, `{"a":1`, `{"a":1}x`, `{"a":}`, `{"a":1}{"b":2}`} {
		_, err := WithKey([]byte(p), "external_key", "k")
		require.Error(t, err, p)
	}
}

func FuzzWithKey(f *testing.F) {
	for _, c := range withKeyCases {
		f.Add(c.payload, c.field, "site_order_1")
	}
	f.Fuzz(func(t *testing.T, raw, field, key string) {
		payload := canonicalOf(t, raw)
		got, err := WithKey(payload, field, key)
		require.NoError(t, err)
		want, err := decodedWithKey(payload, field, key)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

// BenchmarkWithKey is the default body (the payload with our key) of an
// order of a dozen fields, made both ways: spliced, as WithKey makes it,
// and decoded and encoded again, as it was made before (µs/body).
func BenchmarkWithKey(b *testing.B) {
	payload := canonicalOf(b, `{"amount":12990,"currency":"EUR","customer":{"email":"ada@example.com","name":"Ada Lovelace"},
		"lines":[{"sku":"A-1","qty":2,"price":4995},{"sku":"B-7","qty":1,"price":3000}],"note":"leave at the door",
		"placed_at":"2026-12-07T03:00:00Z","shipping":{"city":"London","street":"12 Marylebone Rd","zip":"NW1 5LR"},
		"status":"paid","tags":["gift","priority"],"total_tax":2160,"zeta":true}`)
	for _, way := range []struct {
		name string
		fn   func([]byte, string, string) ([]byte, error)
	}{{"spliced", WithKey}, {"decoded", decodedWithKey}} {
		b.Run(way.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := way.fn(payload, "external_key", "site_order_12345"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1000/float64(b.N), "µs/body")
		})
	}
}
