package redact

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Secrets of every shape the matcher must handle: a plain API key, one with
// what JSON and URLs escape in it, a short one, one that is a word of a mask.
const (
	apiKey    = "ak-7Qx2Lp9Vm4"
	oddSecret = `a/b+c d"é<&>`
	shortPin  = "417"
	maskWord  = "card"
)

func knownRedactor() *Redactor {
	r := New([]string{"ssn"})
	r.AddSecrets(apiKey, oddSecret, shortPin, maskWord, "x", "ab")
	return r
}

func TestTextMasksKnownSecrets(t *testing.T) {
	r := knownRedactor()
	jsonOf := func(s string) string { b, _ := json.Marshal(s); return strings.Trim(string(b), `"`) }
	for _, tc := range []struct{ name, in, want string }{
		{"in prose", "invalid api key " + apiKey + " for account", "invalid api key [redacted] for account"},
		{"glued to other text", "key=x" + apiKey + "y", "key=x[redacted]y"},
		{"in upper case", "KEY " + strings.ToUpper(apiKey), "KEY [redacted]"},
		{"as it is", "got " + oddSecret + "!", "got [redacted]!"},
		{"JSON-escaped by Go", "got " + jsonOf(oddSecret), "got [redacted]"},
		{"JSON-escaped with slashes", `got a\/b+c d\"\u00e9\u003c\u0026\u003e`, "got [redacted]"},
		{"escaped in upper-case hex", `got a\/b+c d\"\u00E9\u003C\u0026\u003E`, "got [redacted]"},
		{"escaped twice", `{\"e\":\"a/b+c d\\\"é<&>\"}`, `{\"e\":\"[redacted]\"}`},
		{"escaped twice, slashes too", `{\"e\":\"a\\\/b+c d\\\"é<&>\"}`, `{\"e\":\"[redacted]\"}`},
		{"in a query", "GET /x?k=" + url.QueryEscape(oddSecret) + "&p=2", "GET /x?k=[redacted]&p=2"},
		{"in a query with %20", "GET /x?k=" + strings.ReplaceAll(url.QueryEscape(oddSecret), "+", "%20"), "GET /x?k=[redacted]"},
		{"in a path", "PUT /x/" + url.PathEscape(oddSecret) + "/y", "PUT /x/[redacted]/y"},
		{"short, alone", "cvv 417 declined", "cvv [redacted] declined"},
		{"short, in JSON", `{"cvv":"417"}`, `{"cvv":"[redacted]"}`},
		{"short, inside a number", "order 44170 and 417x", "order 44170 and 417x"},
		{"short, after an escape", `line\n417`, `line\n[redacted]`},
		{"a word of a mask, alone", "card on file", "[redacted] on file"},
		{"a mask left alone", "[card] and [redacted]", "[card] and [redacted]"},
		{"one or two characters are never masked", "x ab axb", "x ab axb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.Text(tc.in)
			require.Equal(t, tc.want, got)
			require.Equal(t, got, r.Text(got), "redacting twice changes nothing")
		})
	}
}

func TestJSONMasksKnownSecrets(t *testing.T) {
	r := knownRedactor()
	for _, tc := range []struct{ name, in, want string }{
		{"nested member", `{"error":{"detail":{"msg":"invalid api key ` + apiKey + ` for account"}}}`,
			`{"error":{"detail":{"msg":"invalid api key [redacted] for account"}}}`},
		{"escaped in the document", `{"e":"a\/b+c d\"\u00e9\u003c&>"}`, `{"e":"[redacted]"}`},
		{"as a key", `{"` + apiKey + `":"unknown key"}`, `{"[redacted]":"unknown key"}`},
		{"as a number", `{"pin":417,"n":4170}`, `{"pin":"[redacted]","n":4170}`},
		{"in a string that holds JSON", `{"body":"{\"k\":\"` + apiKey + `\"}"}`, `{"body":"{\"k\":\"[redacted]\"}"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(r.JSON([]byte(tc.in)))
			require.Equal(t, tc.want, got)
			require.Equal(t, got, string(r.JSON([]byte(got))), "redacting twice changes nothing")
		})
	}
}

func TestKnownSecretsReachEveryOutput(t *testing.T) {
	r := knownRedactor()
	spaced := "correct horse battery staple"
	r.AddSecrets(spaced)
	text := "HTTP 401: the password " + spaced + " was refused"
	for cut := len("HTTP 401: the password ") + 1; cut < len(text); cut++ {
		got := r.TextPrefix(text, cut)
		require.NotContains(t, got, "horse", "TextPrefix(%d) kept part of a secret: %q", cut, got)
		doc := `{"error":"` + text + `"}`
		gotJSON := string(r.JSONPrefix([]byte(doc), cut+len(`{"error":"`)))
		require.NotContains(t, gotJSON, "horse", "JSONPrefix kept part of a secret: %q", gotJSON)
	}
	require.Equal(t, "the password [redacted]…", r.Known("the password correct horse…"), "Known masks a cut beginning")
	require.Equal(t, "no secret here…", r.Known("no secret here…"))
	require.Equal(t, "key [redacted]", r.Known("key "+apiKey))
	require.Equal(t, "token=[redacted] x", r.Known("token=[redacted] x"), "Known masks nothing but known values")
}

func TestAddSecretsIsSharedAndConcurrent(t *testing.T) {
	r := New(nil)
	derived := r.ForPayload([]byte(`{"password":"pw-derived-1"}`))
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			secret := fmt.Sprintf("runtime-token-%02d-abcdef", i)
			r.AddSecrets(secret)
			require.Equal(t, "got [redacted]", r.Text("got "+secret), "a value is masked as soon as it is added")
			_ = derived.Text("a line with runtime-token-07-abcdef in it")
		}()
	}
	wg.Wait()
	for i := range 40 {
		secret := fmt.Sprintf("runtime-token-%02d-abcdef", i)
		require.Equal(t, "[redacted]", r.Text(secret))
		require.Equal(t, "[redacted]", derived.Text(secret), "a derived Redactor shares the secrets added later")
	}
}

func TestForPayloadMasksTheRecordsValues(t *testing.T) {
	r := New([]string{"ssn"})
	payload := `{"title":"Order 1","customer":{"password":"pw-123","ssn":"078-05-1120","age":41,
		"card":{"number":"4000 0566 5566 5556","cvv":737,"active":true}},
		"fields":[{"value":"+351 912 345 678","name":"Phone"},{"name":"Plan","value":"gold"}],
		"meta":"{\"api_token\":\"tk_inner_value\"}","secret":null}`
	rec := r.ForPayload([]byte(payload))
	for _, v := range []string{"pw-123", "078-05-1120", "737", "+351 912 345 678", "tk_inner_value"} {
		got := rec.Text("422: field has " + v + ".")
		require.Equal(t, "422: field has [redacted].", got, "the value %q", v)
		require.Equal(t, got, rec.Text(got))
		require.Contains(t, r.Text("422: "+v), v, "the parent Redactor does not know the record's values")
	}
	for _, kept := range []string{"Order 1", "gold", "41", "true", "Plan"} {
		require.Contains(t, rec.Text("x "+kept+" y"), kept, "what is not under a sensitive key stays")
	}
	require.Same(t, r, r.ForPayload([]byte(`{"title":"nothing secret"}`)), "no values, no new Redactor")
	require.Same(t, r, r.ForPayload([]byte(`not json`)))
}

// fuzzSecrets are known to the Redactors of the fuzz tests.
var fuzzSecrets = []string{apiKey, oddSecret, shortPin, maskWord, "redacted", "ed]x[re"}

// fuzzRedactor is the Redactor the fuzz tests redact with: one extra
// field, and fuzzSecrets known.
func fuzzRedactor() *Redactor {
	r := New([]string{"ssn"})
	r.AddSecrets(fuzzSecrets...)
	return r
}

func FuzzKnown(f *testing.F) {
	for _, s := range textSeeds {
		f.Add(s)
	}
	for _, s := range []string{
		"invalid api key " + apiKey, `{"e":"a\/b+c d\"\u00e9\u003c&>"}`, "card [card] card", "[redacted]417 417[card]",
		"redacted [redacted] xredactedx", "[redacted]x[redacted]", "\\n417\\" + apiKey, "%2F" + url.QueryEscape(oddSecret),
	} {
		f.Add(s)
	}
	rec := fuzzRedactor().ForPayload([]byte(`{"password":"pw-fuzz 42","cvv":"991"}`))
	f.Fuzz(func(t *testing.T, s string) {
		once := rec.Text(s)
		require.Equal(t, once, rec.Text(once), "Text is not idempotent on %q", s)
		known := rec.Known(s)
		require.Equal(t, known, rec.Known(known), "Known is not idempotent on %q", s)
		j := rec.JSON([]byte(s))
		require.Equal(t, string(j), string(rec.JSON(j)), "JSON is not idempotent on %q", s)
		if !strings.Contains(s, "[") { // no mask in the input for a secret to hide behind
			for _, secret := range []string{apiKey, oddSecret, "pw-fuzz 42"} {
				require.NotContains(t, strings.ToLower(once), strings.ToLower(secret), "a secret survived in %q", once)
			}
		}
	})
}
