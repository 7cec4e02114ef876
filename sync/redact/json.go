package redact

import (
	"bytes"
	"encoding/json"
	"strings"
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

// walker redacts one valid JSON document as it decodes it.
type walker struct {
	r   *Redactor
	dec *json.Decoder
	// openFrom is where closing brackets added after a cut start (see
	// JSONPrefix); -1 when the document is whole.
	openFrom int64
}

func (r *Redactor) walk(doc []byte, openFrom int64) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	w := &walker{r: r, dec: dec, openFrom: openFrom}
	return w.value()
}

// value reads one value and returns it redacted and encoded.
func (w *walker) value() ([]byte, error) {
	r, dec := w.r, w.dec
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return w.object()
		}
		return w.array()
	case string:
		return encodeString(r.jsonString(t)), nil
	case json.Number:
		if cardLike(t.String()) {
			return encodeString(cardMask), nil
		}
		return []byte(t.String()), nil
	case bool:
		if t {
			return []byte("true"), nil
		}
		return []byte("false"), nil
	default:
		return []byte("null"), nil
	}
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
	var members []member
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		val, err := w.memberValue(key)
		if err != nil {
			return nil, err
		}
		members = append(members, member{key: key, val: val})
	}
	if _, err := w.dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	cutOpen := w.openFrom >= 0 && w.dec.InputOffset() > w.openFrom
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
	var skip json.RawMessage
	if err := w.dec.Decode(&skip); err != nil {
		return nil, err
	}
	return redactedJSON, nil
}

func (w *walker) array() ([]byte, error) {
	out := []byte{'['}
	for w.dec.More() {
		val, err := w.value()
		if err != nil {
			return nil, err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, val...)
	}
	if _, err := w.dec.Token(); err != nil { // the closing bracket
		return nil, err
	}
	return append(out, ']'), nil
}

// nameKeys are the members that say what a sibling "value" holds.
var nameKeys = map[string]bool{"name": true, "key": true, "field": true, "label": true, "type": true}

// maskNamedValues masks "value" and "values" in an object whose name member
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
		if k := strings.ToLower(m.key); k == "value" || k == "values" {
			members[i].val = redactedJSON
		}
	}
}

// encodeString encodes s as a JSON string without escaping <, > and &,
// which would only make excerpts harder to read.
func encodeString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
