package redact

import (
	"bytes"
	"encoding/json"
	"strings"
)

// A body too long for the log whole is redacted by its first part only, so
// that the cost does not grow with the body. But cutting must never come
// before redacting (see Excerpt): half a secret may no longer match the
// patterns that find it, and a cut JSON document may have lost the member
// that names a value as sensitive. So what the cut falls in is dropped, not
// redacted, and what may be named past the cut is masked.

// TextPrefix redacts s as Text does when it is at most limit bytes long.
// Otherwise it redacts only the first limit bytes, less the word the cut
// falls in (see dropUnfinished), and ends the result with "…".
func (r *Redactor) TextPrefix(s string, limit int) string {
	limit = max(0, limit)
	if len(s) <= limit {
		return r.Text(s)
	}
	return r.Text(r.dropOpenTail(dropUnfinished(s[:limit]))) + ellipsis
}

// dropUnfinished drops the end of a cut text back to whitespace: a secret
// (a token, an address, a password in a URL) holds none, so none is left
// in part. A known secret may hold whitespace: what may be its beginning
// goes too (see dropOpenTail). A card number may be written in groups joined by single spaces,
// so while what is left ends with a digit and one space, the group before
// that space goes too.
func dropUnfinished(s string) string {
	for {
		s = s[:strings.LastIndexAny(s, " \t\r\n")+1]
		n := len(s)
		if n < 2 || s[n-1] != ' ' || !isDigit(rune(s[n-2])) {
			return s
		}
		s = s[:n-1]
	}
}

// JSONPrefix redacts a JSON body as JSON does when it is at most limit
// bytes long. Otherwise it redacts only the first limit bytes: the scalar the cut
// falls in becomes "…" (a string keeps its words before the cut, as
// TextPrefix keeps them), the containers left open are closed, and the
// result is redacted as JSON and ends with "…". In an object the cut left
// open, "value" and "values" are masked whatever their sibling "name": that
// member may lie past the cut. A body whose first limit bytes do not begin a
// JSON document is redacted as TextPrefix does.
func (r *Redactor) JSONPrefix(body []byte, limit int) []byte {
	limit = max(0, limit)
	if len(body) <= limit {
		return r.JSON(body)
	}
	doc, openFrom, ok := r.closeCut(body[:limit])
	if !ok || !json.Valid(doc) {
		return []byte(r.TextPrefix(string(body), limit))
	}
	out, err := r.walk(doc, openFrom)
	if err != nil {
		return append(bytes.Clone(redactedJSON), ellipsis...)
	}
	return append(out, ellipsis...)
}

// cut is a JSON document cut short, read from its start.
type cut struct {
	r     *Redactor // for what a cut string keeps (cutValue)
	p     []byte
	i     int
	stack []byte // the open containers, '{' or '['
	want  want   // what the innermost container (or the document) expects next
}

type want int

const (
	wantValue        want = iota // a value (in an array, after a colon, or the document's)
	wantKey                      // a key, or the end of an object
	wantColon                    // the colon after a key
	wantCommaOrClose             // a comma or the end of the container
)

// closeCut completes a cut JSON document: it drops the token the cut falls
// in, puts "…" where a value is missing, and closes what is open. openFrom
// is where the added closing brackets start. It fails on anything that does
// not begin a JSON document.
func (r *Redactor) closeCut(p []byte) (doc []byte, openFrom int, ok bool) {
	c := &cut{r: r, p: p}
	for {
		c.skipSpace()
		if c.i == len(p) {
			return c.close(p, nil)
		}
		start := c.i
		partial, ok := c.token()
		if !ok {
			return nil, 0, false
		}
		if partial {
			return c.close(p[:start], p[start:])
		}
	}
}

func (c *cut) skipSpace() {
	for c.i < len(c.p) && strings.IndexByte(" \t\r\n", c.p[c.i]) >= 0 {
		c.i++
	}
}

// token reads one token and moves the state on; partial means the cut fell
// in it. A number or literal that reaches the cut may have lost digits, so
// it counts as partial too.
func (c *cut) token() (partial, ok bool) {
	b := c.p[c.i]
	switch {
	case b == '{' || b == '[':
		if c.want != wantValue {
			return false, false
		}
		c.i++
		c.stack = append(c.stack, b)
		c.want = first(b)
	case b == '}' || b == ']':
		if len(c.stack) == 0 || c.stack[len(c.stack)-1] != b-2 { // '{'+2 == '}', '['+2 == ']'
			return false, false
		}
		c.i++
		c.stack = c.stack[:len(c.stack)-1]
		c.want = wantCommaOrClose
	case b == ',':
		if c.want != wantCommaOrClose || len(c.stack) == 0 {
			return false, false
		}
		c.i++
		c.want = first(c.stack[len(c.stack)-1])
	case b == ':':
		if c.want != wantColon {
			return false, false
		}
		c.i++
		c.want = wantValue
	case b == '"':
		if c.want != wantValue && c.want != wantKey {
			return false, false
		}
		if !c.skipString() {
			return true, true
		}
		if c.want == wantKey {
			c.want = wantColon
		} else {
			c.want = wantCommaOrClose
		}
	default:
		if c.want != wantValue || !isLiteralByte(b) {
			return false, false
		}
		for c.i < len(c.p) && isLiteralByte(c.p[c.i]) {
			c.i++
		}
		if c.i == len(c.p) {
			return true, true
		}
		c.want = wantCommaOrClose
	}
	return false, true
}

// first is what a container expects after its opening bracket or a comma.
func first(open byte) want {
	if open == '{' {
		return wantKey
	}
	return wantValue
}

// isLiteralByte reports whether b may be part of a number, true, false or null.
func isLiteralByte(b byte) bool {
	return isDigit(rune(b)) || isLetter(rune(b)) || b == '+' || b == '-' || b == '.'
}

// skipString moves past a string; false when the cut falls in it.
func (c *cut) skipString() bool {
	for c.i++; c.i < len(c.p); c.i++ {
		switch c.p[c.i] {
		case '\\':
			c.i++
		case '"':
			c.i++
			return true
		}
	}
	return false
}

// close completes kept, the document before the token the cut fell in
// (partial, if any).
func (c *cut) close(kept, partial []byte) (doc []byte, openFrom int, ok bool) {
	doc = []byte(strings.TrimRight(string(kept), " \t\r\n"))
	switch c.want {
	case wantKey: // a cut key is dropped whole; so is the comma before it
		doc = []byte(strings.TrimSuffix(string(doc), ","))
	case wantColon:
		doc = append(doc, `:"`+ellipsis+`"`...)
	case wantValue:
		switch {
		case partial != nil:
			doc = append(doc, c.r.cutValue(partial)...)
		case len(c.stack) == 0:
			return nil, 0, false // nothing of a document
		case doc[len(doc)-1] == '[':
		default: // after a colon or a comma
			doc = append(doc, `"`+ellipsis+`"`...)
		}
	}
	openFrom = len(doc)
	for i := len(c.stack) - 1; i >= 0; i-- {
		doc = append(doc, c.stack[i]+2)
	}
	return doc, openFrom, true
}

// cutValue stands for a value the cut fell in. A string keeps its words
// before the cut, unless it holds JSON of its own, which would need closing
// in turn; anything else becomes "…".
func (r *Redactor) cutValue(partial []byte) string {
	s := string(partial)
	if !strings.HasPrefix(s, `"`) {
		return `"` + ellipsis + `"`
	}
	words := r.dropOpenTail(dropUnfinished(s[1:]))
	if t := strings.TrimSpace(words); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		words = ""
	}
	return `"` + words + ellipsis + `"`
}
