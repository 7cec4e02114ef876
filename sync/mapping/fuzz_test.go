package mapping

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzForm feeds arbitrary payloads through the form encoder: it must
// never panic, whatever it writes must parse back with net/url, top-level
// strings must come back unchanged, and the escaping must be
// url.QueryEscape's.
func FuzzForm(f *testing.F) {
	f.Add([]byte(`{"email":"ana@example.com","metadata":{"k":"v"}}`), "a&b=c")
	f.Add([]byte(`{"a":[1,2.5,null,true,{"b":[]}],"c":{}}`), "José 東京")
	f.Add([]byte(`{"id":123456789012345678901234567890,"f":1e300,"g":-0.0}`), "[x]+%")
	f.Add([]byte(`{"a b&c":"d=e","ü":"\u0000\n"}`), "\xff\xfe")
	f.Add([]byte(`{"k[x]":1}`), "")
	f.Fuzz(func(t *testing.T, payload []byte, s string) {
		if got, want := string(appendEscaped(nil, s, false)), url.QueryEscape(s); got != want {
			t.Fatalf("escape %q: got %q, url.QueryEscape gives %q", s, got, want)
		}
		doc, err := decodePayload(payload)
		if err != nil {
			return
		}
		out, err := Form(doc)
		if err != nil {
			return
		}
		back, err := url.ParseQuery(string(out))
		if err != nil {
			t.Fatalf("form %q does not parse back: %v", out, err)
		}
		for k, v := range doc {
			if str, ok := v.(string); ok && !strings.ContainsAny(k, "[]") {
				if got := back.Get(k); got != str {
					t.Fatalf("field %q: sent %q, read back %q from %q", k, str, got, out)
				}
			}
		}
		if _, err := JSON(doc); err != nil {
			t.Fatalf("a decoded payload must encode as JSON: %v", err)
		}
	})
}

// FuzzRender compiles arbitrary expressions and renders them on arbitrary
// payloads: any outcome but a panic or a hang is fine.
func FuzzRender(f *testing.F) {
	f.Add(".email", []byte(`{"email":"a@b.c"}`))
	f.Add(`{email, metadata: {k: $key}}`, []byte(`{"email":null}`))
	f.Add(`.items[] | .name`, []byte(`{"items":[{"name":1},{"name":2}]}`))
	f.Add(`.x // "d" | ascii_downcase`, []byte(`{}`))
	f.Add(`"\(.a) \(.b)" | @base64`, []byte(`{"a":1,"b":[1]}`))
	f.Add(`last(repeat(1))`, []byte(`{}`))
	f.Add(`.n * 100 | round`, []byte(`{"n":12345678901234567890123}`))
	f.Fuzz(func(t *testing.T, expr string, payload []byte) {
		for _, fields := range []map[string]string{{"a.b": expr}, nil} {
			whole := ""
			if fields == nil {
				whole = expr
			}
			m, err := Compile(fields, whole)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "body") {
					t.Fatalf("a compile error must name its target: %v", err)
				}
				continue
			}
			_ = m.Reads()
			body, err := m.Render(payload, testVars)
			if err != nil {
				continue
			}
			_, _ = Form(body)
			if _, err := JSON(body); err != nil {
				t.Fatalf("a rendered body must encode as JSON: %v", err)
			}
		}
	})
}
