// Package redact removes what must never reach a log: credentials, signature
// secrets, card numbers and configured personal-data fields (README, the
// redact setting). Request and response excerpts, webhook payloads and
// process log records all pass through a Redactor before they are written.
package redact

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// The masks written in place of what was removed. None of them contains a
// character that a pattern in this package matches, which is what makes
// redacting twice give the same result as redacting once.
const (
	redacted  = "[redacted]"
	cardMask  = "[card]"
	emailMask = "[email]"
	ellipsis  = "…"
)

// HasMask reports whether s holds a mask this package writes: a value
// read back from a redacted copy that is not the value that was sent.
func HasMask(s string) bool {
	return strings.Contains(s, redacted) || strings.Contains(s, cardMask) || strings.Contains(s, emailMask)
}

// DefaultFields are the keys whose values are always redacted. New reads the
// slice when it is called, so change it (if ever) before building Redactors.
var DefaultFields = []string{
	// credentials and signature secrets
	"password", "passwd", "pwd", "token", "secret", "authorization",
	"api_key", "apikey", "private_key", "credential", "signature",
	"cookie", "set_cookie",
	// payment data
	"card_number", "card", "pan", "cvv", "iban",
	// personal data
	"email", "phone",
}

// minSuffixField is the shortest field that also matches as the end of a
// glued lower-case word ("accesstoken", "clientsecret"). Shorter fields must
// be a whole word, or "span" would hide a "pan" and "discard" a "card".
const minSuffixField = 5

// Redactor masks sensitive values in JSON bodies, free text, HTTP headers and
// slog records. Build it with New; it is safe for concurrent use.
type Redactor struct {
	keys *keyRules
	// secrets are the values known to be secret (credentials the
	// configuration holds, see AddSecrets), shared with every Redactor that
	// ForPayload derives from this one.
	secrets *secretSet
	// record masks the values of one record's sensitive fields (ForPayload);
	// nil in a Redactor from New.
	record *matcher
	// keep are ids that long runs of token characters are not masked in
	// (Keeping); nil in a Redactor from New.
	keep []string
}

// Keeping returns a Redactor that, besides what r masks, leaves alone the
// long runs of token characters that lie within one of ids: the values
// that configuration says are a provider's ids or our keys (Stripe's
// pi_3MtwBwLkdIwHu7ix28a3tqPa looks like a token, and a webhook's effect
// is replayed from the stored copy). Known secrets, sensitive fields and
// every other pattern are masked as before: a known secret is masked even
// where it is given as an id.
func (r *Redactor) Keeping(ids ...string) *Redactor {
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return len(id) < minSecret })
	if len(ids) == 0 {
		return r
	}
	c := *r
	c.keep = append(slices.Clone(r.keep), ids...)
	return &c
}

// maskRun masks a run of token characters unless it lies within a kept id.
func (r *Redactor) maskRun(run string) string {
	for _, id := range r.keep {
		if strings.Contains(id, run) {
			return run
		}
	}
	return maskRun(run)
}

// keyRules are the sensitive fields and what Sensitive has decided.
type keyRules struct {
	fields []field
	// known remembers Sensitive's answers, up to maxKnown keys: bodies
	// repeat the same few keys, and splitting one into words allocates.
	known  sync.Map // key → bool
	nKnown atomic.Int32
}

// maxKnown bounds the keys a Redactor remembers, whatever providers send.
const maxKnown = 4096

// field is one sensitive key, split into lower-case words.
type field struct {
	words   []string
	compact string // the words joined without separators
}

// New returns a Redactor for DefaultFields plus fields (typically the
// personal-data fields an operator configured). The extra fields add to the
// defaults and never replace them: a configuration mistake must not let a
// password through. Fields are matched like keys (see Sensitive).
func New(fields []string) *Redactor {
	r := &keyRules{}
	seen := map[string]bool{}
	for _, f := range slices.Concat(DefaultFields, fields) {
		words := keyWords(f)
		id := strings.Join(words, "_")
		if len(words) == 0 || seen[id] {
			continue
		}
		seen[id] = true
		r.fields = append(r.fields, field{words: words, compact: strings.Join(words, "")})
	}
	return &Redactor{keys: r, secrets: &secretSet{values: map[string]bool{}}}
}

// Sensitive reports whether values under key must be redacted.
//
// Keys are compared word by word, case-insensitively: a key is split at every
// character that is not a letter or digit ("-", ".", "_", space), at
// camelCase humps ("cardNumber", "APIKey") and between letters and digits.
// It matches when a run of its words equals a field ("access_token",
// "X-Api-Key", "customer.email"), allowing a plural "s" on the last word
// ("tokens"), or when one word ends with a field of five letters or more
// ("accesstoken"). "tokenizer_version" does not match: no word is "token".
func (r *Redactor) Sensitive(key string) bool { return r.keys.sensitive(key) }

func (r *keyRules) sensitive(key string) bool {
	if v, ok := r.known.Load(key); ok {
		return v.(bool)
	}
	v := r.matches(key)
	if r.nKnown.Load() < maxKnown {
		if _, loaded := r.known.LoadOrStore(key, v); !loaded {
			r.nKnown.Add(1)
		}
	}
	return v
}

func (r *keyRules) matches(key string) bool {
	words := keyWords(key)
	for _, f := range r.fields {
		if f.matches(words) {
			return true
		}
	}
	return false
}

func (f field) matches(words []string) bool {
	n := len(f.words)
	for i := 0; i+n <= len(words); i++ {
		if slices.Equal(words[i:i+n-1], f.words[:n-1]) && sameWord(words[i+n-1], f.words[n-1]) {
			return true
		}
	}
	if len(f.compact) < minSuffixField {
		return false
	}
	for _, w := range words {
		if strings.HasSuffix(w, f.compact) || strings.HasSuffix(strings.TrimSuffix(w, "s"), f.compact) {
			return true
		}
	}
	return false
}

func sameWord(w, f string) bool {
	return w == f || len(w) == len(f)+1 && w[len(f)] == 's' && w[:len(f)] == f
}

// keyWords splits a key into lower-case words (see Sensitive).
func keyWords(key string) []string {
	rs := []rune(key)
	var words []string
	start := -1
	for i, c := range rs {
		alnum := unicode.IsLetter(c) || unicode.IsDigit(c)
		if start >= 0 && (!alnum || hump(rs, i)) {
			words = append(words, strings.ToLower(string(rs[start:i])))
			start = -1
		}
		if alnum && start < 0 {
			start = i
		}
	}
	if start >= 0 {
		words = append(words, strings.ToLower(string(rs[start:])))
	}
	return words
}

// hump reports whether a new word starts at rs[i], which follows a letter or digit.
func hump(rs []rune, i int) bool {
	prev, c := rs[i-1], rs[i]
	switch {
	case unicode.IsDigit(prev) != unicode.IsDigit(c):
		return true
	case unicode.IsUpper(c) && unicode.IsLower(prev):
		return true
	case unicode.IsUpper(c) && unicode.IsUpper(prev):
		// "APIKey": the K starts a word because a lower-case letter follows it.
		return i+1 < len(rs) && unicode.IsLower(rs[i+1])
	}
	return false
}

// allowedHeaders are the headers whose values help a reader and carry no
// secret. Every other header may be a credential or a signature.
var allowedHeaders = map[string]bool{
	"Content-Type": true, "Content-Length": true, "Idempotency-Key": true,
	"Retry-After": true, "Location": true, "X-Request-Id": true, "Date": true,
	"User-Agent": true, "Accept": true, "Webhook-Id": true, "Webhook-Timestamp": true,
	"X-Github-Delivery": true, "X-Github-Event": true, "X-Github-Hook-Id": true,
	"X-Shopify-Webhook-Id": true, "X-Shopify-Topic": true,
}

// ShowsHeader reports whether Headers shows the value of the header name:
// the allow-listed headers, whose values carry no secret.
func ShowsHeader(name string) bool { return allowedHeaders[http.CanonicalHeaderKey(name)] }

// Headers renders h as "Name: value" lines sorted by name. Only allow-listed
// headers show their values (still passed through Text); every other header
// is listed as "[redacted]" so a reader can see that it was sent.
func (r *Redactor) Headers(h http.Header) string {
	byName := make(map[string][]string, len(h))
	for name, values := range h {
		canon := http.CanonicalHeaderKey(name)
		byName[canon] = append(byName[canon], values...)
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		for _, v := range r.headerValues(name, byName[name]) {
			b.WriteString(name + ": " + v + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (r *Redactor) headerValues(name string, values []string) []string {
	if !allowedHeaders[name] {
		return []string{redacted}
	}
	if len(values) == 0 {
		return []string{""}
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = oneLine(r.Text(v))
	}
	return out
}

// oneLine keeps a header value from forging a line of its own.
func oneLine(s string) string { return lineBreaks.Replace(s) }

// lineBreaks returns a string with no line break unchanged, without
// allocating.
var lineBreaks = strings.NewReplacer("\r", " ", "\n", " ")

// Excerpt cuts s to at most max bytes without splitting a UTF-8 sequence,
// ending it with "…" when anything was cut. Pass it text that is already
// redacted: a secret cut in half may no longer match the patterns that find
// it, so truncating first could let half a secret through.
func (r *Redactor) Excerpt(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	cut, tail := max-len(ellipsis), ellipsis
	if cut < 0 { // no room for the ellipsis itself
		cut, tail = max, ""
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + tail
}
