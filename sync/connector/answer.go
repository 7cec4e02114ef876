package connector

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/syncdesk/syncdesk/sync/config"
)

// listShapes names, for an error, the list answers the connector reads
// when the object does not say where its list sits (items).
const listShapes = `a list ([…], {"items":[…]} or {"data":[…]})`

// listOf reads the list in a list or search answer: at the object's items
// path when it names one, else a bare array, {"items": […]} or
// {"data": […]}. null there is an empty list; every element must be an
// object. It reports false for anything else, so that an answer of another
// shape is never read as an empty list.
func listOf(v any, o config.Object) ([]map[string]any, bool) {
	if o.Items != "" {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		return objects(config.ValueAt(m, o.Items), hasPath(m, o.Items))
	}
	switch t := v.(type) {
	case []any:
		return objects(t, true)
	case map[string]any:
		for _, k := range []string{"items", "data"} {
			if l, present := t[k]; present {
				return objects(l, true)
			}
		}
	}
	return nil, false
}

// hasPath reports whether the dotted path leads to a member, null or not.
func hasPath(m map[string]any, p string) bool {
	parent, last := m, p
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		pm, ok := config.ValueAt(m, p[:i]).(map[string]any)
		if !ok {
			return false
		}
		parent, last = pm, p[i+1:]
	}
	_, ok := parent[last]
	return ok
}

// objects reads v as a list of objects; null counts as empty when present
// (Go writes an empty slice as null).
func objects(v any, present bool) ([]map[string]any, bool) {
	if v == nil {
		return nil, present
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

// listShape names the list answer an object expects, for an error.
func listShape(o config.Object) string {
	if o.Items != "" {
		return fmt.Sprintf("a list at %q", o.Items)
	}
	return listShapes
}

// carrying returns the ids of the objects in a lookup answer whose key is
// exactly key (a provider's search may be loose), and those objects, in
// the same order. An answer it cannot read is an error: a list of another
// shape, one object without the key field, an object whose key cannot be
// read, or one carrying key without an id.
func carrying(resp any, obj config.Object, key string) ([]string, []map[string]any, error) {
	list, ok := listOf(resp, obj)
	if !ok {
		m, isObject := resp.(map[string]any)
		if !isObject || config.ValueAt(m, obj.KeyField) == nil {
			return nil, nil, fmt.Errorf("expected %s, or one object with a %q field", listShape(obj), obj.KeyField)
		}
		list = []map[string]any{m}
	}
	var ids []string
	var items []map[string]any
	for _, item := range list {
		// Of an object whose key cannot be read, whether it is ours cannot
		// be told; taking it for someone else's could hide the object a
		// lost create made.
		switch v := config.ValueAt(item, obj.KeyField).(type) {
		case nil:
			return nil, nil, fmt.Errorf("an object in the list has no %q field", obj.KeyField)
		case string, json.Number:
			if fmt.Sprint(v) != key {
				continue
			}
		default:
			return nil, nil, fmt.Errorf("an object's %q field is not text", obj.KeyField)
		}
		id := obj.IDOf(item)
		if id == "" {
			return nil, nil, fmt.Errorf("an object carrying the key has no %q field with its id", obj.IDField)
		}
		// One object listed twice (a search that matches it on two fields)
		// is still one object, not a duplicate for a person to resolve.
		if !slices.Contains(ids, id) {
			ids, items = append(ids, id), append(items, item)
		}
	}
	return ids, items, nil
}

// choices reads the objects an answer of 300 Multiple Choices names: a list
// of their URLs (Salesforce: "/services/data/v60.0/sobjects/Account/001…")
// or of objects with an id. The last segment of a URL is the id.
func choices(resp any, obj config.Object) []string {
	list, _ := resp.([]any)
	var ids []string
	for _, it := range list {
		var id string
		switch v := it.(type) {
		case string:
			id = path.Base(v)
		case map[string]any:
			id = obj.IDOf(v)
		}
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// conflictID reads the id of the existing object a refused create names,
// when the object says how (conflict); "" when it does not name one.
func (o object) conflictID(status int, resp any, raw []byte) string {
	if o.Conflict == nil || status != o.Conflict.Status {
		return ""
	}
	if o.Conflict.IDPath != "" {
		if id := config.StringAt(resp, o.Conflict.IDPath); id != "" {
			return id
		}
	}
	if o.conflict != nil {
		if m := o.conflict.FindSubmatch(raw); len(m) > 1 {
			return string(m[1])
		}
	}
	return ""
}

// providerMessage picks the provider's own words out of an error answer:
// {"error": "…"}, {"error": {"message": "…"}} (Stripe), {"message": "…"}
// (HubSpot), [{"message": "…", "errorCode": "…"}] (Salesforce), or the
// body as it is.
func providerMessage(decoded any, raw []byte) string {
	if l, ok := decoded.([]any); ok && len(l) > 0 {
		if m, ok := l[0].(map[string]any); ok {
			msg, _ := m["message"].(string)
			if code, _ := m["errorCode"].(string); code != "" && msg != "" {
				return code + ": " + msg
			}
			if msg != "" {
				return msg
			}
		}
	}
	if m, ok := decoded.(map[string]any); ok {
		for _, k := range []string{"error", "message", "detail", "error_description"} {
			switch v := m[k].(type) {
			case string:
				if d, _ := m["error_description"].(string); k == "error" && d != "" {
					return v + ": " + d
				}
				return v
			case map[string]any:
				if s, ok := v["message"].(string); ok {
					return s
				}
			}
		}
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return http.StatusText(0)
	}
	return s
}
