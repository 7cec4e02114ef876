package redact

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var textSeeds = []string{
	"",
	"Authorization: Bearer sk_live_4eC39HqLyjWDarjtT1zdp7dc",
	"Basic dXNlcjpwYXNz and Basic plan",
	"card 4242 4242 4242 4242 or 4111-1111-1111-1111, not 4242 4242 4242 4241",
	"1 4242 4242 4242 4242 4242",
	"note: token=abc&password=x; api key: y",
	`{\"password\":\"hunter2\"}`,
	`{"password":"hunt`,
	"mail ana@example.com or https://u:p@host.example.com/x",
	"/hooks/services/T0001/B0002/XyZ9aBcDeFgHiJkLmNoPqRsT3uVw",
	"AbCdEfGhIjKlMnOpQrStUvWx12/abc/ZyXwVuTsRqPoNmLkJiHgFeDc34==",
	"123e4567-e89b-12d3-a456-426614174000 2024-01-15T10:00:00Z",
	"token: Bearer [redacted]",
	"password=[redacted]x",
	"\xff\xfe token=\xff",
	"\n,https://]54242424242424242dXNlcjpwYXNz/u:p@", // a later mask once completed a URL password
	"Bearer Bearer abcdefgh12",
}

func FuzzText(f *testing.F) {
	for _, s := range textSeeds {
		f.Add(s, 20)
	}
	r := fuzzRedactor()
	f.Fuzz(func(t *testing.T, s string, limit int) {
		once := r.Text(s)
		require.Equal(t, once, r.Text(once), "Text is not idempotent on %q", s)

		cut := r.Excerpt(once, limit)
		require.LessOrEqual(t, len(cut), max(limit, 0))
		if utf8.ValidString(once) {
			require.True(t, utf8.ValidString(cut), "Excerpt split a rune")
		}
	})
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":{"b":[{"c":{"password":"x","n":1.50}}]},"tokenizer_version":"v2"}`,
		`[1,2.0,-3e10,12345678901234567890,4242424242424242,"4242 4242 4242 4242"]`,
		`{"fields":[{"name":"email","value":{"x":1}},{"key":"pan","values":[1]}]}`,
		`{"payload":"{\"cardNumber\":\"x\"}","s":" [ 1 ] ","t":"[card] x"}`,
		`"Bearer abcdefgh12"`,
		`{"z":1,"z":2,"<&>":"\u00e9\ud83d\ude00"}`,
		`{"password":"hunter2","note":`,
		`"\u00e9 token=\q"`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range textSeeds {
		f.Add([]byte(s))
	}
	r := fuzzRedactor()
	f.Fuzz(func(t *testing.T, body []byte) {
		once := r.JSON(body)
		if json.Valid(body) {
			require.True(t, json.Valid(once), "JSON made valid JSON invalid: %q -> %q", body, once)
		}
		require.Equal(t, string(once), string(r.JSON(once)), "JSON is not idempotent on %q", body)
	})
}

// textEveryPattern is Text without its shortcuts: every pattern on every string.
func (r *Redactor) textEveryPattern(s string) string {
	s = r.maskKnown(s)
	s = rewrite(keyPrefix, s, r.maskPair)
	s = userinfo.ReplaceAllString(s, "${1}"+redacted+"@")
	s = rewrite(authScheme, s, maskCredential)
	s = email.ReplaceAllString(s, emailMask)
	s = maskCards(s)
	return tokenRun.ReplaceAllStringFunc(s, maskRun)
}

func FuzzTextShortcuts(f *testing.F) {
	for _, s := range textSeeds {
		f.Add(s)
	}
	f.Add("baſic dXNlcjpwYXNz")
	f.Add("BEARER abcdefgh12 and Basic dXNlcjpwYXNz")
	f.Add("Date: Mon, 30 Nov 2026 01:27:15 GMT; 1password=x; a1\\\" \t= y; \u212Aey: z")
	r := fuzzRedactor()
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, r.textEveryPattern(s), r.Text(s), "the shortcuts changed what Text does to %q", s)
	})
}
