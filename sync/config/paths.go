package config

import (
	"encoding/json"
	"strings"
)

// ValueAt reads a dotted path ("id", "data.id", "properties.email") from a
// decoded JSON value; nil when any step is missing.
func ValueAt(v any, path string) any {
	for part := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

// StringAt reads a dotted path as text; a number counts, as its digits.
func StringAt(v any, path string) string {
	switch x := ValueAt(v, path).(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

// IDOf reads the provider's id of an object in an answer. id_field may name
// alternatives separated by "|", the first found wins: Salesforce says
// "id" in an upsert's answer and "Id" in a record.
func (o Object) IDOf(v any) string {
	for p := range strings.SplitSeq(o.IDField, "|") {
		if s := StringAt(v, p); s != "" {
			return s
		}
	}
	return ""
}

// KeyOf reads our key off an object in an answer.
func (o Object) KeyOf(v any) string { return StringAt(v, o.KeyField) }
