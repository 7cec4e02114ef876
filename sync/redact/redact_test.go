package redact

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestSensitive(t *testing.T) {
	r := New([]string{"date_of_birth", "Shipping-Address"})
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"password", true},
		{"PASSWORD", true},
		{"access_token", true},
		{"refresh-token", true},
		{"client_secret", true},
		{"customer_email", true},
		{"customer.email", true},
		{"X-Api-Token", true},
		{"X-Api-Key", true},
		{"apiKey", true},
		{"APIKey", true},
		{"apikey", true},
		{"cardNumber", true},
		{"card_number", true},
		{"card number", true},
		{"Authorization", true},
		{"Proxy-Authorization", true},
		{"Stripe-Signature", true},
		{"X-Hub-Signature-256", true},
		{"Set-Cookie", true},
		{"tokens", true},        // plural
		{"accesstoken", true},   // glued lower-case words
		{"userPassword2", true}, // digits split off
		{"pan", true},
		{"IBAN", true},
		{"dateOfBirth", true},        // configured, camelCase
		{"shipping_address", true},   // configured, written differently
		{"tokenizer_version", false}, // no word is "token"
		{"tokenizer", false},
		{"span", false},    // short fields must be a whole word
		{"discard", false}, // same
		{"company", false},
		{"secretary", false},
		{"idempotency_key", false},
		{"key", false},
		{"amount", false},
		{"", false},
	} {
		require.Equal(t, tc.want, r.Sensitive(tc.key), "Sensitive(%q)", tc.key)
	}
}

func TestNewKeepsDefaults(t *testing.T) {
	extra := New([]string{"ssn"})
	require.True(t, extra.Sensitive("ssn"), "a configured field is added")
	require.True(t, extra.Sensitive("password"), "and the defaults stay")
	require.False(t, New(nil).Sensitive("ssn"), "New(nil) has only the defaults")
	require.True(t, New([]string{}).Sensitive("token"), "an empty list keeps the defaults too")
}

func TestText(t *testing.T) {
	r := New(nil)
	for _, tc := range []struct{ name, in, want string }{
		{"bearer in free text", "retrying with Bearer sk_live_4eC39HqLyjWDarjtT1zdp7dc now",
			"retrying with Bearer [redacted] now"},
		{"bearer jwt", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "Bearer [redacted]"},
		{"bearer as a word", "invalid bearer token", "invalid bearer token"},
		{"bearer after a bearer", "Bearer Bearer abcdefgh12", "Bearer Bearer [redacted]"},
		{"basic credential", "Basic dXNlcjpwYXNz", "Basic [redacted]"},
		{"basic as a word", "Basic plan for 12 months", "Basic plan for 12 months"},
		{"authorization header line", "Authorization: Bearer abc", "Authorization: [redacted]"},
		{"query parameters", "GET /deals?token=abc123&page=2", "GET /deals?token=[redacted]&page=2"},
		{"key colon value", "password: hunter2, user: ana", "password: [redacted], user: ana"},
		{"quoted pair", `{"client_secret":"s3cr3t","id":7}`, `{"client_secret":"[redacted]","id":7}`},
		{"escaped pair", `body={\"password\":\"hunter2\"}`, `body={\"password\":\"[redacted]\"}`},
		{"cut-off quoted pair", `{"password":"hunt`, `{"password":"[redacted]`},
		{"multi-word key", "API Key: abc", "API Key: [redacted]"},
		{"pair inside an innocent value", "note: token=abc", "note: token=[redacted]"},
		{"form field in brackets", "amount=500&card[password]=hunter2&currency=eur", "amount=500&card[password]=[redacted]&currency=eur"},
		{"form field nested twice", "metadata[login][api_key]=abc123&x=1", "metadata[login][api_key]=[redacted]&x=1"},
		{"visa with spaces", "card 4242 4242 4242 4242 declined", "card [card] declined"},
		{"visa with dashes", "4111-1111-1111-1111", "[card]"},
		{"card run with a stray digit before", "qty 1 4242 4242 4242 4242", "qty 1 [card]"},
		{"luhn-invalid 16 digits", "ref 4242 4242 4242 4241", "ref 4242 4242 4242 4241"},
		{"millisecond timestamp", "at 1700000000000", "at 1700000000000"},
		{"digits glued to letters", "inv4242424242424242", "inv4242424242424242"},
		{"email", "sent to ana.silva+crm@example.co.uk.", "sent to [email]."},
		{"url password", "dial postgres://app:s3cret@db.internal/syncdesk", "dial postgres://[redacted]@db.internal/syncdesk"},
		{"webhook secret", "secret is whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "secret is [redacted]"},
		{"sdk key", "using sdk_ABCdef1234567890ghijKLMN", "using [redacted]"},
		{"secret in a url path", "POST /hooks/services/T0001/B0002/XyZ9aBcDeFgHiJkLmNoPqRsT3uVw",
			"POST /hooks/services/T0001/B0002/[redacted]"},
		{"uuid", "link 123e4567-e89b-12d3-a456-426614174000 failed", "link 123e4567-e89b-12d3-a456-426614174000 failed"},
		{"uuid in a path", "/deals/0f8fad5b-d9cb-469f-a165-70867728950e/notes", "/deals/0f8fad5b-d9cb-469f-a165-70867728950e/notes"},
		{"timestamp", "at 2024-01-15T10:00:00.123456Z", "at 2024-01-15T10:00:00.123456Z"},
		{"url path", "PUT https://crm.example.com/api/v1/deals/123", "PUT https://crm.example.com/api/v1/deals/123"},
		{"glued words and numbers", "job sync-outbox-claim-due-links-v2", "job sync-outbox-claim-due-links-v2"},
		{"ordinary words", "deal created after 3 retries", "deal created after 3 retries"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.Text(tc.in)
			require.Equal(t, tc.want, got)
			require.Equal(t, got, r.Text(got), "redacting twice changes nothing")
		})
	}
}

func TestJSON(t *testing.T) {
	r := New([]string{"birth_date"})
	for _, tc := range []struct{ name, in, want string }{
		{"nested at depth four, in arrays",
			`{"deal":{"contacts":[{"name":"Ana","auth":{"password":"p","apiKey":"k"}}]}}`,
			`{"deal":{"contacts":[{"name":"Ana","auth":{"password":"[redacted]","apiKey":"[redacted]"}}]}}`},
		{"whole value of any type", `{"card":{"number":"4242","exp":"12/30"},"tokens":["a","b"],"pin":1,"cvv":123}`,
			`{"card":"[redacted]","tokens":"[redacted]","pin":1,"cvv":"[redacted]"}`},
		{"a key that must not match", `{"tokenizer_version":"v2","idempotency_key":"k-1"}`,
			`{"tokenizer_version":"v2","idempotency_key":"k-1"}`},
		{"numbers keep their literal", `{"amount":12.50,"big":12345678901234567890,"exp":1e3,"neg":-0.0}`,
			`{"amount":12.50,"big":12345678901234567890,"exp":1e3,"neg":-0.0}`},
		{"card number as a number", `{"n":4242424242424242,"m":4242424242424241}`, `{"n":"[card]","m":4242424242424241}`},
		{"order kept, duplicates kept", `{"z":1,"a":2,"z":3}`, `{"z":1,"a":2,"z":3}`},
		{"free text in strings", `{"note":"Bearer abcdefgh1234 for ana@example.com","id":"123e4567-e89b-12d3-a456-426614174000"}`,
			`{"note":"Bearer [redacted] for [email]","id":"123e4567-e89b-12d3-a456-426614174000"}`},
		{"named custom field", `{"fields":[{"value":"+1 555 0100","name":"Phone"},{"name":"Plan","value":"gold"}]}`,
			`{"fields":[{"value":"[redacted]","name":"Phone"},{"name":"Plan","value":"gold"}]}`},
		// HubSpot's property change events name the field and carry its value
		// apart: {"propertyName":"phone","propertyValue":"…"}.
		{"named property change", `[{"objectId":51,"propertyName":"phone","propertyValue":"+16175550100"},{"propertyName":"dealstage","propertyValue":"won"}]`,
			`[{"objectId":51,"propertyName":"phone","propertyValue":"[redacted]"},{"propertyName":"dealstage","propertyValue":"won"}]`},
		{"a name alone masks nothing", `{"firstname":"phone","value":"x"}`, `{"firstname":"phone","value":"x"}`},
		{"json inside a string", `{"payload":"{\"cardNumber\": \"4111\", \"id\": 5}"}`,
			`{"payload":"{\"cardNumber\":\"[redacted]\",\"id\":5}"}`},
		{"configured field", `{"birthDate":"1990-01-01"}`, `{"birthDate":"[redacted]"}`},
		{"top-level array and whitespace", " [ {\"secret\" : 1} , \"x\" ] ", `[{"secret":"[redacted]"},"x"]`},
		{"html is not escaped", `{"msg":"<a & b>"}`, `{"msg":"<a & b>"}`},
		{"not json: redacted as text", `{"password":"hunter2","note":`, `{"password":"[redacted]","note":`},
		{"not json: plain text", "upstream said: token=abc", "upstream said: token=[redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.JSON([]byte(tc.in))
			require.Equal(t, tc.want, string(got))
			require.Equal(t, string(got), string(r.JSON(got)), "redacting twice changes nothing")
		})
	}
}

func TestHeaders(t *testing.T) {
	r := New(nil)
	h := http.Header{}
	h.Set("Authorization", "Bearer sk_live_4eC39HqLyjWDarjtT1zdp7dc")
	h.Set("Content-Type", "application/json")
	h.Set("Idempotency-Key", "deal-42-create")
	h.Set("X-Custom-Thing", "harmless but unknown")
	h.Set("Stripe-Signature", "t=1,v1=abc")
	h.Add("Accept", "application/json")
	h.Add("Accept", "text/plain")
	h["user-agent"] = []string{"syncdesk/1.0 Bearer abcdefgh12"} // not canonical, and a credential where none belongs

	want := strings.Join([]string{
		"Accept: application/json",
		"Accept: text/plain",
		"Authorization: [redacted]",
		"Content-Type: application/json",
		"Idempotency-Key: deal-42-create",
		"Stripe-Signature: [redacted]",
		"User-Agent: syncdesk/1.0 Bearer [redacted]",
		"X-Custom-Thing: [redacted]",
	}, "\n")
	require.Equal(t, want, r.Headers(h))
	require.Empty(t, r.Headers(nil))
}

func TestExcerpt(t *testing.T) {
	r := New(nil)
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456…"},
		{"ééééé", 6, "é…"},  // 3 bytes left for text: one é (2 bytes), never half of one
		{"abcdef", 2, "ab"}, // no room for the ellipsis
		{"abcdef", 0, ""},
		{"abcdef", -1, ""},
	} {
		got := r.Excerpt(tc.in, tc.max)
		require.Equal(t, tc.want, got, "Excerpt(%q, %d)", tc.in, tc.max)
		require.LessOrEqual(t, len(got), max(tc.max, 0))
		require.True(t, utf8.ValidString(got))
	}
}

// Ids that configuration names stay readable; a secret does not, even
// when it is given as one, and neither does a token around an id.
func TestKeepingLeavesNamedIDsReadable(t *testing.T) {
	r := New(nil)
	r.AddSecrets("sk_live_51HqLyjWDarjtT1zdp7dcXYZabc")
	id := "pi_3MtwBwLkdIwHu7ix28a3tqPa"
	body := `{"id":"` + id + `","token":"x","note":"sk_live_51HqLyjWDarjtT1zdp7dcXYZabc","other":"ab12cd34ef56gh78ij90kl12mn34","cs":"` + id + `_secret_YrKJUKribcBjcG8HVhfZluoGH"}`
	require.NotContains(t, string(r.JSON([]byte(body))), id, "by itself, a long id looks like a token")
	got := string(r.Keeping(id, "sk_live_51HqLyjWDarjtT1zdp7dcXYZabc", "short").JSON([]byte(body)))
	require.Contains(t, got, `"id":"`+id+`"`)
	require.NotContains(t, got, "sk_live_51HqLyjWDarjtT1zdp7dcXYZabc", "a known secret is masked even when named as an id")
	require.NotContains(t, got, "ab12cd34ef56gh78ij90kl12mn34", "other tokens are masked as before")
	require.NotContains(t, got, "_secret_YrKJUKribcBjcG8HVhfZluoGH", "a token that holds an id is not the id")
	require.Same(t, r, r.Keeping("short"), "no id long enough to be masked: the redactor itself")
}

// A configured personal-data field sent form-encoded in Stripe's bracket
// notation (metadata[tax_id]=…) is masked in the excerpt of the request,
// as it is in JSON: README's secrets promise covers attempt rows.
func TestAConfiguredFieldInAFormBodyIsMasked(t *testing.T) {
	r := New([]string{"tax_id", "phone"})
	got := r.Text("amount=500&metadata[tax_id]=DE123456789&shipping[phone]=%2B4915112345678&currency=eur")
	require.Equal(t, "amount=500&metadata[tax_id]=[redacted]&shipping[phone]=[redacted]&currency=eur", got)
}
