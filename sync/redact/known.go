package redact

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Values known to be secret — the credentials the configuration holds, and
// a record's sensitive fields (ForPayload) — are masked verbatim wherever
// text is redacted, whatever shape surrounds them: a provider that answers
// "invalid api key <the key>" in prose, a nested JSON member or text/plain
// gives no pattern to find, only the value itself.
//
// How long a value must be decides where it is masked:
//   - under minKnown bytes, nowhere: one or two characters hide nothing a
//     guess would not find, and masking them would blank every "a", "1" or
//     "eu" of a message (attempt counts, status codes, regions);
//   - under minAnywhere bytes, only as a whole token (see standsAlone): a
//     three-digit CVV or a short password echoed in an error goes, while
//     "123" inside "41234" stays;
//   - from minAnywhere bytes on, anywhere, even glued to other text: a
//     value that long does not occur by chance in other words.
const (
	minKnown    = 3
	minAnywhere = 8
)

// secretSet is the set of known secret values a Redactor and the Redactors
// derived from it share. Readers load the matcher without a lock; adding
// values builds a new one and swaps it in.
type secretSet struct {
	mu      sync.Mutex
	values  map[string]bool
	matcher atomic.Pointer[matcher]
}

// AddSecrets adds values to the secrets this Redactor (and every Redactor
// ForPayload derives from it) masks wherever they appear, from now on:
// typically the configuration's credentials at start, and later any
// learned at run time (a fetched access token). Values under three bytes
// are ignored (see minKnown). Safe for concurrent use; each call that adds
// something rebuilds the matcher in time proportional to all the values,
// which suits credentials: few, and rarely added.
func (r *Redactor) AddSecrets(values ...string) {
	s := r.secrets
	s.mu.Lock()
	defer s.mu.Unlock()
	added := false
	for _, v := range values {
		for _, v := range []string{v, strings.TrimSpace(v)} {
			if len(v) >= minKnown && !s.values[v] {
				s.values[v], added = true, true
			}
		}
	}
	if added {
		s.matcher.Store(newMatcher(patternsOf(slices.Sorted(maps.Keys(s.values)))))
	}
}

// Known masks the known secret values in s (see AddSecrets and ForPayload),
// and nothing else: for text that was redacted already, by a Redactor that
// did not know all of them. When s was cut short (it ends with "…"), what
// the cut left of the beginning of a value is masked too.
func (r *Redactor) Known(s string) string {
	s = r.maskKnown(s)
	body, cut := strings.CutSuffix(s, ellipsis)
	if !cut {
		return s
	}
	if n := r.openTail(body); n > 0 {
		return body[:len(body)-n] + redacted + ellipsis
	}
	return s
}

// maskKnown masks the known secret values in s.
func (r *Redactor) maskKnown(s string) string {
	if m := r.secrets.matcher.Load(); m != nil {
		s = m.mask(s)
	}
	if r.record != nil {
		s = r.record.mask(s)
	}
	return s
}

// openTail is the length of the end of s that may be the beginning of a
// known value cut off (see matcher.openTail).
func (r *Redactor) openTail(s string) int {
	n := 0
	if m := r.secrets.matcher.Load(); m != nil {
		n = m.openTail(s)
	}
	if r.record != nil {
		n = max(n, r.record.openTail(s))
	}
	return n
}

// dropOpenTail drops from a cut text what may be the beginning of a known
// value: cut there, no pattern would find it whole.
func (r *Redactor) dropOpenTail(s string) string { return s[:len(s)-r.openTail(s)] }

// patternsOf are the patterns that find values, in every form they are
// written in (see forms).
func patternsOf(values []string) []pattern {
	var pats []pattern
	for _, v := range values {
		if len(v) < minKnown {
			continue
		}
		for _, f := range forms(v) {
			pats = append(pats, pattern{text: f, alone: len(v) < minAnywhere})
		}
	}
	return pats
}

// forms are the ways a value may be written in what a provider answers or
// a log line quotes: as it is; escaped in a JSON string, by the encoders
// found in the wild (escaping "/" or not, <, > and & as \u003c… or not,
// anything beyond ASCII as \u00e9… or not), once or twice (a body quoted
// inside a JSON string); and URL-encoded for a query or a path. Case is
// folded when matching, so "%2f" and "%2F", "\u003C" and "\u003c" are one.
func forms(v string) []string {
	if plainToken(v) {
		return []string{v}
	}
	out := []string{v}
	add := func(f string) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for flags := range jsonAll + 1 {
		if !needsJSONEscape(v) {
			break // the same in every JSON form
		}
		once := jsonEscape(v, flags)
		add(once)
		add(jsonEscape(once, flags))
	}
	q := url.QueryEscape(v)
	add(q)
	add(strings.ReplaceAll(q, "+", "%20"))
	add(url.PathEscape(v))
	return out
}

// plainToken reports whether v is written the same in every form: ASCII
// letters, digits and "-", "_", ".", "~", as most credentials are.
func plainToken(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isTokenByte(c) && c != '-' && c != '.' && c != '~' {
			return false
		}
	}
	return true
}

// needsJSONEscape reports whether some JSON encoder writes s otherwise.
func needsJSONEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || strings.IndexByte(`"\/<>&`, c) >= 0 {
			return true
		}
	}
	return false
}

// What a JSON encoder may escape beyond what it must (", \ and control
// characters).
const (
	jsonSlash = 1 << iota // "/" as "\/"
	jsonHTML              // <, >, & and U+2028/U+2029 as \u003c…
	jsonASCII             // anything beyond ASCII as \uXXXX
	jsonAll   = jsonSlash | jsonHTML | jsonASCII
)

// jsonEscape writes s as the inside of a JSON string, escaping as flags say.
func jsonEscape(s string, flags int) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '/' && flags&jsonSlash != 0:
			b.WriteString(`\/`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20,
			flags&jsonHTML != 0 && (c == '<' || c == '>' || c == '&' || c == '\u2028' || c == '\u2029'):
			writeHex4(&b, c)
		case c >= utf8.RuneSelf && flags&jsonASCII != 0:
			writeUnicodeEscape(&b, c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// writeUnicodeEscape writes c as \uXXXX, or as a surrogate pair beyond the
// Basic Multilingual Plane.
func writeUnicodeEscape(b *strings.Builder, c rune) {
	if c < 0x10000 {
		writeHex4(b, c)
		return
	}
	c -= 0x10000
	writeHex4(b, 0xd800+(c>>10))
	writeHex4(b, 0xdc00+(c&0x3ff))
}

// writeHex4 writes \uXXXX for c, which is below 0x10000.
func writeHex4(b *strings.Builder, c rune) {
	const hex = "0123456789abcdef"
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hex[c>>shift&0xf])
	}
}
