package stripe

import (
	"slices"
	"strconv"
	"strings"
)

// kind is what a parameter holds.
type kind int

const (
	kString   kind = iota
	kInt           // an integer, sent as digits
	kBool          // true or false
	kEnum          // one of field.enum
	kHash          // a hash of field.sub; "" unsets it
	kMetadata      // string keys and values (https://docs.stripe.com/api/metadata)
	kList          // a list of strings
)

// field describes one parameter an endpoint takes.
type field struct {
	kind kind
	enum []string
	sub  fields
	max  int // longest string accepted; 0 is 5000, Stripe's usual bound
}

// fields are the parameters of one endpoint, by name.
type fields map[string]field

// Metadata limits: "up to 50 keys, with key names up to 40 characters long
// and values up to 500 characters long" (https://docs.stripe.com/api/metadata).
const (
	metadataKeys     = 50
	metadataKeyLen   = 40
	metadataValueLen = 500
)

// unset is what a parameter sent as "" becomes where Stripe reads the empty
// string as "remove this" (a hash, or a metadata key).
type unset struct{}

// check validates p against spec and converts its values: int64 for kInt,
// bool for kBool, map[string]any for kHash, map[string]any of string or
// unset for kMetadata, []string for kList; a hash sent as "" is unset.
func check(p map[string]any, spec fields, prefix string) (map[string]any, *apiError) {
	out := make(map[string]any, len(p))
	for _, name := range sortedKeys(p) {
		full := name
		if prefix != "" {
			full = prefix + "[" + name + "]"
		}
		f, ok := spec[name]
		if !ok {
			return nil, unknownParam(full)
		}
		v, err := f.convert(p[name], full)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// convert checks one value against its field.
func (f field) convert(v any, full string) (any, *apiError) {
	s, isString := v.(string)
	switch f.kind {
	case kHash:
		if isString && s == "" {
			return unset{}, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, invalidParam(full, "parameter_invalid_hash", "Invalid hash for %s: got %s.", full, describe(v))
		}
		return check(m, f.sub, full)
	case kMetadata:
		return convertMetadata(v, full)
	case kList:
		return convertList(v, full)
	}
	if !isString {
		return nil, invalidParam(full, "", "Invalid value for %s: expected a single value, got %s.", full, describe(v))
	}
	return f.scalar(s, full)
}

// scalar checks a string, integer, boolean or enum value.
func (f field) scalar(s, full string) (any, *apiError) {
	switch f.kind {
	case kInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, invalidParam(full, "parameter_invalid_integer", "Invalid integer: %s", s)
		}
		return n, nil
	case kBool:
		b, err := strconv.ParseBool(s)
		if err != nil || (s != "true" && s != "false") {
			return nil, invalidParam(full, "", "Invalid boolean: %s", s)
		}
		return b, nil
	case kEnum:
		if !slices.Contains(f.enum, s) {
			return nil, invalidParam(full, "", "Invalid %s: must be one of %s", full, strings.Join(f.enum, ", "))
		}
		return s, nil
	}
	limit := f.max
	if limit == 0 {
		limit = 5000
	}
	if len(s) > limit {
		return nil, invalidParam(full, "", "Invalid string: %s is longer than %d characters.", full, limit)
	}
	return s, nil
}

// convertMetadata checks Stripe's metadata limits; a key sent as "" is to
// be removed, and metadata="" removes them all.
func convertMetadata(v any, full string) (any, *apiError) {
	if s, ok := v.(string); ok && s == "" {
		return unset{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalidParam(full, "parameter_invalid_hash", "Invalid hash for %s: metadata is a set of keys and values, as in metadata[order_id]=6735.", full)
	}
	if len(m) > metadataKeys {
		return nil, invalidParam(full, "", "Invalid metadata: at most %d keys, got %d.", metadataKeys, len(m))
	}
	out := make(map[string]any, len(m))
	for k, val := range m {
		s, ok := val.(string)
		switch {
		case !ok:
			return nil, invalidParam(full+"["+k+"]", "", "Invalid value for metadata[%s]: metadata values are strings, got %s.", k, describe(val))
		case len(k) > metadataKeyLen:
			return nil, invalidParam(full+"["+k+"]", "", "Invalid metadata key: %q is longer than %d characters.", k, metadataKeyLen)
		case len(s) > metadataValueLen:
			return nil, invalidParam(full+"["+k+"]", "", "Invalid metadata value for %q: longer than %d characters.", k, metadataValueLen)
		case s == "":
			out[k] = unset{}
		default:
			out[k] = s
		}
	}
	return out, nil
}

// convertList reads a list of strings.
func convertList(v any, full string) (any, *apiError) {
	l, ok := asList(v)
	if !ok {
		return nil, invalidParam(full, "", "Invalid array for %s: send it as %s[]=a or %s[0]=a.", full, full, full)
	}
	out := make([]string, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, invalidParam(full, "", "Invalid array for %s: its items are strings, got %s.", full, describe(e))
		}
		out[i] = s
	}
	return out, nil
}

// merge applies checked parameters to a stored object: values replace,
// hashes merge key by key, unset clears, metadata keys sent as "" go away
// ("Individual keys can be unset by posting an empty value to them. All
// keys can be unset by posting an empty value to metadata.",
// https://docs.stripe.com/api/metadata).
func merge(obj, changes map[string]any) {
	for k, v := range changes {
		switch t := v.(type) {
		case unset:
			if k == "metadata" {
				obj[k] = map[string]any{}
			} else {
				obj[k] = nil
			}
		case map[string]any:
			cur, ok := obj[k].(map[string]any)
			if !ok {
				cur = map[string]any{}
			}
			merge(cur, t)
			if k == "metadata" {
				for mk, mv := range cur {
					if mv == nil {
						delete(cur, mk)
					}
				}
			}
			obj[k] = cur
		case []string:
			l := make([]any, len(t))
			for i, s := range t {
				l[i] = s
			}
			obj[k] = l
		default:
			obj[k] = v
		}
	}
}

// sortedKeys lists m's keys in order, for stable first errors.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
