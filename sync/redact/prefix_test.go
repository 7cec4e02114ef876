package redact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// prefixSecrets are planted in the bodies below; no five bytes in a row of
// any of them appear anywhere else in those bodies.
var prefixSecrets = []string{
	"hunter2-correct-horse", "ana.customer@example.com", "+33 6 12 34 56 78", "4242 4242 4242 4242",
	"4111111111111111", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "tok_5f4dcc3b5aa765d61d8327deb882cf99",
	"bob:Zq9vWx", "Yz8xWv7uTs6rQp",
}

// requireNoPieceOf fails if out holds five bytes in a row of any secret.
func requireNoPieceOf(t *testing.T, out, context string) {
	t.Helper()
	for _, secret := range prefixSecrets {
		for i := 0; i+5 <= len(secret); i++ {
			if piece := secret[i : i+5]; strings.Contains(out, piece) {
				require.Failf(t, "a piece of a secret leaked", "%q of %q in %q (%s)", piece, secret, out, context)
			}
		}
	}
}

const secretJSON = `{"title":"Order 7","buyer":{"password":"hunter2-correct-horse","email":"ana.customer@example.com"},` +
	`"fields":[{"value":"+33 6 12 34 56 78","name":"phone"},{"name":"plan","value":"gold"}],` +
	`"note":"paid with 4242 4242 4242 4242, key sk_live_4eC39HqLyjWDarjtT1zdp7dc, see https://bob:Zq9vWx@host.test/x",` +
	`"payment":{"card_number":4242424242424242,"n":4111111111111111},"token":{"nested":"tok_5f4dcc3b5aa765d61d8327deb882cf99"},` +
	`"auth":"Bearer Yz8xWv7uTs6rQp","list":[1, true, null, "a b c", {"k": [ ]}]}`

// Every cut of a document holding every kind of secret, in every place
// (under a sensitive key, in free text, named by a sibling that comes
// after it, as a number), leaves no piece of any secret.
func TestJSONPrefixLeaksNothingAtAnyCut(t *testing.T) {
	r := New(nil)
	requireNoPieceOf(t, string(r.JSON([]byte(secretJSON))), "the whole document")
	for n := 0; n < len(secretJSON); n++ {
		out := string(r.JSONPrefix([]byte(secretJSON), n))
		requireNoPieceOf(t, out, fmt.Sprintf("cut at %d", n))
		require.True(t, strings.HasSuffix(out, ellipsis), "a cut is shown: %q", out)
	}
	require.Equal(t, string(r.JSON([]byte(secretJSON))), string(r.JSONPrefix([]byte(secretJSON), len(secretJSON))))
}

func TestTextPrefixLeaksNothingAtAnyCut(t *testing.T) {
	r := New(nil)
	text := "HTTP 502: <html>upstream said password: \"hunter2-correct-horse\" for ana.customer@example.com, " +
		"card 4242 4242 4242 4242 or 4111111111111111, Authorization: Bearer Yz8xWv7uTs6rQp, " +
		"key sk_live_4eC39HqLyjWDarjtT1zdp7dc via https://bob:Zq9vWx@host.test/x</html>"
	for n := 0; n < len(text); n++ {
		requireNoPieceOf(t, r.TextPrefix(text, n), fmt.Sprintf("cut at %d", n))
	}
	require.Equal(t, r.Text(text), r.TextPrefix(text, len(text)))
}

func TestJSONPrefixCuts(t *testing.T) {
	r := New(nil)
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"in a key", `{"a":1,"password":"x"}`, 10, `{"a":1}…`},
		{"after a key", `{"a":1,"password":"x"}`, 17, `{"a":1,"password":"[redacted]"}…`},
		{"in a string: words before the cut stay", `{"note":"two words cut here"}`, 22, `{"note":"two words …"}…`},
		{"in a number", `{"n":[12345,6]}`, 8, `{"n":["…"]}…`},
		{"in a string holding JSON", `{"p":"{\"a\": \"b c\"}"}`, 18, `{"p":"…"}…`},
		{"a value whose name lies past the cut", `{"value":"+1 555 0100","name":"phone"}`, 26, `{"value":"[redacted]"}…`},
		{"a closed object keeps its value", `[{"value":"gold"},{"value":"x y"}]`, 27, `[{"value":"gold"},{"value":"[redacted]"}]…`},
		{"not JSON", "<html><body>token=abc def</body></html>", 30, "<html><body>token=[redacted] …"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, string(r.JSONPrefix([]byte(tc.in), tc.max)))
		})
	}
}

// The cost of a prefix does not grow with the body.
func TestJSONPrefixReadsOnlyThePrefix(t *testing.T) {
	r := New(nil)
	body := `{"items":[` + strings.Repeat(`{"title":"Order","total":"12.00"},`, 100_000) + `{}],"password":"hunter2-correct-horse"}`
	allocs := testing.AllocsPerRun(5, func() { r.JSONPrefix([]byte(body), 8192) })
	short := testing.AllocsPerRun(5, func() { r.JSONPrefix([]byte(body[:20_000]), 8192) })
	require.InDelta(t, short, allocs, short/10, "a body of %d bytes costs as one of 20,000", len(body))
}

func FuzzJSONPrefix(f *testing.F) {
	f.Add([]byte(secretJSON), 100)
	f.Add([]byte(`[1,"a\"b\\`), 8)
	f.Add([]byte(`{"a":{"b":[{"value":1,`), 20)
	f.Add([]byte("x"), -1)
	r := New(nil)
	f.Fuzz(func(t *testing.T, body []byte, max int) {
		out := r.JSONPrefix(body, max)
		if len(body) <= max {
			require.Equal(t, string(r.JSON(body)), string(out))
		}
	})
}
