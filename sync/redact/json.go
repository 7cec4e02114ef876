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
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	out, err := r.jsonValue(dec)
	if err != nil {
		// Valid input always decodes; if it ever does not, hide it all.
		return bytes.Clone(redactedJSON)
	}
	return out
}

// jsonValue reads one value from dec and returns it redacted and encoded.
func (r *Redactor) jsonValue(dec *json.Decoder) ([]byte, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return r.jsonObject(dec)
		}
		return r.jsonArray(dec)
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

func (r *Redactor) jsonObject(dec *json.Decoder) ([]byte, error) {
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		val, err := r.memberValue(dec, key)
		if err != nil {
			return nil, err
		}
		members = append(members, member{key: key, val: val})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	r.maskNamedValues(members)
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
func (r *Redactor) memberValue(dec *json.Decoder, key string) ([]byte, error) {
	if !r.Sensitive(key) {
		return r.jsonValue(dec)
	}
	var skip json.RawMessage
	if err := dec.Decode(&skip); err != nil {
		return nil, err
	}
	return redactedJSON, nil
}

func (r *Redactor) jsonArray(dec *json.Decoder) ([]byte, error) {
	out := []byte{'['}
	for dec.More() {
		val, err := r.jsonValue(dec)
		if err != nil {
			return nil, err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, val...)
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return nil, err
	}
	return append(out, ']'), nil
}

// nameKeys are the members that say what a sibling "value" holds.
var nameKeys = map[string]bool{"name": true, "key": true, "field": true, "label": true, "type": true}

// maskNamedValues masks "value" and "values" in an object whose name member
// names a sensitive field. The name is checked after its own redaction, so a
// second pass sees the same name and decides the same way.
func (r *Redactor) maskNamedValues(members []member) {
	named := false
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
