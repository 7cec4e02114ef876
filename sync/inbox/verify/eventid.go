package verify

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// parseJSON decodes a body for field look-ups. A body that is not exactly
// one JSON value gives nil, so every look-up finds nothing. It runs only
// after the signature verified: strangers cannot make us parse.
func parseJSON(body []byte) any {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // keeps large numeric ids exact
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil
	}
	return doc
}

// lookup follows a dotted path through JSON objects and returns the string
// or number found there; anything else (absent, null, object, array, bool)
// gives "".
func lookup(doc any, path string) string {
	for key := range strings.SplitSeq(path, ".") {
		obj, ok := doc.(map[string]any)
		if !ok {
			return ""
		}
		doc = obj[key]
	}
	switch v := doc.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

// validPath reports whether a dotted path names a field at every step.
func validPath(path string) bool {
	for key := range strings.SplitSeq(path, ".") {
		if key == "" {
			return false
		}
	}
	return true
}
