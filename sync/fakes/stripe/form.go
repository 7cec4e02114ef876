package stripe

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Stripe's API "accepts form-encoded request bodies, returns JSON-encoded
// responses" (https://docs.stripe.com/api). Nested parameters use bracket
// notation: metadata[key]=value, shipping[address][city]=Paris, and lists
// expand[]=a or expand[0]=a (https://docs.stripe.com/api/metadata,
// https://docs.stripe.com/api/expanding_objects).

// params is a decoded request: string leaves, map[string]any for hashes,
// []any for lists.
type params map[string]any

// readForm returns the parameters of r and their canonical encoding (keys
// sorted), which is what the idempotency layer compares. A POST body must
// be form-encoded: Stripe refuses any other Content-Type with a 400
// ("Invalid request: unsupported Content-Type ...", as seen in
// https://github.com/vapor-community/stripe/issues/39).
func readForm(r *http.Request) (params, string, *apiError) {
	values := r.URL.Query()
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			return nil, "", invalidRequest("Invalid request: the body could not be read as a form (%v).", err)
		}
		if ct := r.Header.Get("Content-Type"); ct != "" || r.ContentLength != 0 {
			if mt, _, _ := mime.ParseMediaType(ct); mt != "application/x-www-form-urlencoded" {
				if ct == "" {
					ct = "(none)"
				}
				return nil, "", invalidRequest("Invalid request: unsupported Content-Type %s. Send parameters form-encoded (application/x-www-form-urlencoded).", ct)
			}
		}
		values = r.PostForm
	}
	p, err := decodeBrackets(values)
	if err != nil {
		return nil, "", err
	}
	return p, values.Encode(), nil
}

// decodeBrackets turns flat form values into nested params. A key given
// twice keeps its last value, as Stripe's form parser does.
func decodeBrackets(values url.Values) (params, *apiError) {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable first error; expand[] keeps its order within one key
	root := map[string]any{}
	for _, k := range keys {
		path, ok := splitBrackets(k)
		if !ok {
			return nil, invalidParam(k, "", "Invalid parameter name: %s (brackets must pair, as in metadata[key]).", k)
		}
		vs := values[k]
		if path[len(path)-1] != "" {
			vs = vs[len(vs)-1:]
		}
		for _, v := range vs {
			if err := insert(root, path, v, k); err != nil {
				return nil, err
			}
		}
	}
	return root, nil
}

// splitBrackets splits "a[b][]" into ["a", "b", ""].
func splitBrackets(k string) ([]string, bool) {
	i := strings.IndexByte(k, '[')
	if i < 0 {
		return []string{k}, k != "" && !strings.Contains(k, "]")
	}
	path := []string{k[:i]}
	rest := k[i:]
	for rest != "" {
		end := strings.IndexByte(rest, ']')
		if rest[0] != '[' || end < 0 || strings.ContainsRune(rest[1:end], '[') {
			return nil, false
		}
		path = append(path, rest[1:end])
		rest = rest[end+1:]
	}
	return path, path[0] != ""
}

// insert places value at path inside node. "[]" appends to a list and may
// only end a key; a numeric segment ("[0]") is a hash key, as Stripe's
// parser reads it, and becomes a list index only where a list is expected
// (see asList).
func insert(node map[string]any, path []string, value, full string) *apiError {
	clash := invalidParam(full, "", "Invalid value for %s: it is given both as a value and as a hash or list.", full)
	for i, seg := range path {
		if seg == "" {
			return invalidParam(full, "", "Invalid parameter name: %s (an empty [] may only end a name, as in expand[]).", full)
		}
		child, exists := node[seg]
		switch {
		case i == len(path)-2 && path[i+1] == "":
			l, ok := child.([]any)
			if exists && !ok {
				return clash
			}
			node[seg] = append(l, value)
			return nil
		case i == len(path)-1:
			if exists {
				return clash
			}
			node[seg] = value
			return nil
		}
		m, ok := child.(map[string]any)
		if exists && !ok {
			return clash
		}
		if !exists {
			m = map[string]any{}
			node[seg] = m
		}
		node = m
	}
	return nil
}

// asList reads a list given as expand[]=a or as expand[0]=a&expand[1]=b
// (a hash whose keys are 0..n-1), the two ways Stripe's clients send one.
func asList(v any) ([]any, bool) {
	switch t := v.(type) {
	case []any:
		return t, true
	case map[string]any:
		out := make([]any, len(t))
		for k, c := range t {
			n, err := strconv.Atoi(k)
			if err != nil || n < 0 || n >= len(t) || strconv.Itoa(n) != k {
				return nil, false
			}
			out[n] = c
		}
		return out, true
	}
	return nil, false
}

// describe names a value's kind for an error message.
func describe(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a hash"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%q", v)
}
