package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// redactedJSON is a masked value inside a JSON document.
var redactedJSON = []byte(`"` + redacted + `"`)

// JSON redacts a JSON document. The whole value of every member whose key is
// sensitive (see Sensitive), at any depth, becomes "[redacted]", whatever its
// type; so does "value" next to a "name", "key", "field", "label" or "type"
// that names a sensitive field ({"name": "phone", "value": "…"}, the shape of
// custom fields in many CRMs). Every other string goes through Text, or
// through JSON if it holds a JSON object or array. Numbers keep their exact
// literal, except a card number, which becomes "[card]". The result is
// compact and keeps members in their input order, duplicates included.
//
// A body that is not valid JSON (a truncated excerpt, an HTML error page) is
// redacted as Text instead.
func (r *Redactor) JSON(body []byte) []byte {
	if !json.Valid(body) {
		text := []byte(r.Text(string(body)))
		if json.Valid(text) {
			// Masking repaired the syntax ("token=\q" in a string); walk the
			// result too, or a second pass would see JSON and change it.
			return r.JSON(text)
		}
		return text
	}
	out, err := r.walk(body, -1)
	if err != nil {
		// Valid input always decodes; if it ever does not, hide it all.
		return bytes.Clone(redactedJSON)
	}
	return out
}

// walker redacts one valid JSON document as it reads it, byte by byte: it
// is only ever given documents json.Valid accepts, which keeps it short.
type walker struct {
	r   *Redactor
	doc []byte
	i   int
	// openFrom is where closing brackets added after a cut start (see
	// JSONPrefix); -1 when the document is whole.
	openFrom int
}

// errWalk means the walker met what a valid document does not hold.
var errWalk = errors.New("redact: not a valid JSON document")

func (r *Redactor) walk(doc []byte, openFrom int) ([]byte, error) {
	w := &walker{r: r, doc: doc, openFrom: openFrom}
	return w.value()
}

func (w *walker) skipSpace() {
	for w.i < len(w.doc) && (w.doc[w.i] == ' ' || w.doc[w.i] == '\t' || w.doc[w.i] == '\n' || w.doc[w.i] == '\r') {
		w.i++
	}
}

// peek returns the next byte after any whitespace, 0 at the end.
func (w *walker) peek() byte {
	w.skipSpace()
	if w.i == len(w.doc) {
		return 0
	}
	return w.doc[w.i]
}

// value reads one value and returns it redacted and encoded.
func (w *walker) value() ([]byte, error) {
	switch c := w.peek(); {
	case c == '{':
		return w.object()
	case c == '[':
		return w.array()
	case c == '"':
		s, err := w.str()
		if err != nil {
			return nil, err
		}
		return encodeString(w.r.jsonString(s)), nil
	case c == 0:
		return nil, errWalk
	default: // a number, true, false or null: kept as written, unless a card number
		lit := w.literal()
		if len(lit) == 0 {
			return nil, errWalk
		}
		return w.r.literal(lit), nil
	}
}

// literal redacts a number, true, false or null: a card number becomes
// "[card]", one that holds a known secret "[redacted]" (see AddSecrets).
func (r *Redactor) literal(lit []byte) []byte {
	switch s := string(lit); {
	case cardLike(s):
		return encodeString(cardMask)
	case r.maskKnown(s) != s:
		return redactedJSON
	}
	return lit
}

// literal reads a number, true, false or null.
func (w *walker) literal() []byte {
	start := w.i
	for w.i < len(w.doc) && isLiteralByte(w.doc[w.i]) {
		w.i++
	}
	return w.doc[start:w.i]
}

// str reads a string and returns it unquoted.
func (w *walker) str() (string, error) {
	start, escaped := w.i, false
	if w.i == len(w.doc) || w.doc[w.i] != '"' {
		return "", errWalk
	}
	for w.i++; w.i < len(w.doc); w.i++ {
		switch w.doc[w.i] {
		case '\\':
			escaped = true
			w.i++
		case '"':
			w.i++
			raw := w.doc[start+1 : w.i-1]
			if !escaped && utf8.Valid(raw) {
				return string(raw), nil
			}
			var s string
			err := json.Unmarshal(w.doc[start:w.i], &s)
			return s, err
		}
	}
	return "", errWalk
}

// skip moves past one value unread.
func (w *walker) skip() error {
	switch c := w.peek(); c {
	case '"':
		_, err := w.str()
		return err
	case '{', '[':
		w.i++
		for {
			switch w.peek() {
			case '}', ']':
				w.i++
				return nil
			case ',', ':':
				w.i++
			case 0:
				return errWalk
			default:
				if err := w.skip(); err != nil {
					return err
				}
			}
		}
	case 0:
		return errWalk
	default:
		w.literal()
		return nil
	}
}

// expect consumes c, the next byte after whitespace.
func (w *walker) expect(c byte) error {
	if w.peek() != c {
		return errWalk
	}
	w.i++
	return nil
}

// jsonString redacts a string value; one that holds a JSON object or array
// is redacted as JSON, so a payload stored as a string keeps its keys.
func (r *Redactor) jsonString(s string) string {
	trimmed := strings.TrimSpace(s)
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		return string(r.JSON([]byte(s)))
	}
	return r.Text(s)
}

// member is one redacted member of an object.
type member struct {
	key string
	val []byte
}

func (w *walker) object() ([]byte, error) {
	w.i++ // the opening brace
	var members []member
	for w.peek() != '}' {
		if len(members) > 0 {
			if err := w.expect(','); err != nil {
				return nil, err
			}
			w.skipSpace()
		}
		key, err := w.str()
		if err != nil {
			return nil, err
		}
		// A provider may echo a secret as a key ({"<the key>": "invalid"}).
		// Sensitive decides on the masked key, which a second pass sees.
		key = w.r.maskKnown(key)
		if err := w.expect(':'); err != nil {
			return nil, err
		}
		val, err := w.memberValue(key)
		if err != nil {
			return nil, err
		}
		members = append(members, member{key: key, val: val})
	}
	w.i++ // the closing brace
	cutOpen := w.openFrom >= 0 && w.i > w.openFrom
	w.r.maskNamedValues(members, cutOpen)
	out := []byte{'{'}
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, encodeString(m.key)...)
		out = append(out, ':')
		out = append(out, m.val...)
	}
	return append(out, '}'), nil
}

// memberValue redacts the value under key, skipping it unread when the key is sensitive.
func (w *walker) memberValue(key string) ([]byte, error) {
	if !w.r.Sensitive(key) {
		return w.value()
	}
	return redactedJSON, w.skip()
}

func (w *walker) array() ([]byte, error) {
	w.i++ // the opening bracket
	out := []byte{'['}
	for w.peek() != ']' {
		if len(out) > 1 {
			if err := w.expect(','); err != nil {
				return nil, err
			}
			out = append(out, ',')
		}
		val, err := w.value()
		if err != nil {
			return nil, err
		}
		out = append(out, val...)
	}
	w.i++ // the closing bracket
	return append(out, ']'), nil
}

// nameKeys are the members that say what a sibling value member holds
// (valueKeys); HubSpot's property change events name theirs propertyName
// and propertyValue.
var nameKeys = map[string]bool{"name": true, "key": true, "field": true, "label": true, "type": true, "propertyname": true}

// valueKeys are the members a nameKeys member names.
var valueKeys = map[string]bool{"value": true, "values": true, "propertyvalue": true}

// maskNamedValues masks the value members in an object whose name member
// names a sensitive field, or in any object when unnamed is set (a cut may
// have dropped its name). The name is checked after its own redaction, so a
// second pass sees the same name and decides the same way.
func (r *Redactor) maskNamedValues(members []member, unnamed bool) {
	named := unnamed
	for _, m := range members {
		var name string
		if nameKeys[strings.ToLower(m.key)] && json.Unmarshal(m.val, &name) == nil && r.Sensitive(name) {
			named = true
		}
	}
	if !named {
		return
	}
	for i, m := range members {
		if valueKeys[strings.ToLower(m.key)] {
			members[i].val = redactedJSON
		}
	}
}

// encodeString encodes s as a JSON string without escaping <, > and &,
// which would only make excerpts harder to read.
func encodeString(s string) []byte {
	if plainASCII(s) {
		out := make([]byte, 0, len(s)+2)
		return append(append(append(out, '"'), s...), '"')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// plainASCII reports whether s is printable ASCII with no quote or
// backslash: what JSON encodes as it is.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
