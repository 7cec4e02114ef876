package mapping

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// decodePayload reads a record's payload, which must be one JSON object.
// Numbers are read exactly and handed to gojq as the types it computes
// with: int when they fit, *big.Int for larger integers (ids beyond 2^53
// stay exact), float64 otherwise.
func decodePayload(payload []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("something follows the JSON value")
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("it is %s", kindOf(v))
	}
	normalize(doc)
	return doc, nil
}

// normalize replaces every json.Number in v, in place, and returns v
// with them replaced.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		return number(string(x))
	case map[string]any:
		for k, e := range x {
			switch e := e.(type) {
			case json.Number:
				x[k] = number(string(e))
			case map[string]any, []any:
				normalize(e) // changed in place: no need to store it again
			}
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

// number turns a JSON number's text into int, *big.Int or float64.
func number(s string) any {
	if i, err := strconv.Atoi(s); err == nil {
		return i
	}
	if !strings.ContainsAny(s, ".eE") {
		if b, ok := new(big.Int).SetString(s, 10); ok {
			return b
		}
	}
	// Out of range, ParseFloat still gives ±Inf, which gojq handles.
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// kindOf names a JSON value's kind for an error message.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, int, float64, *big.Int:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a Go %T", v)
}

// fieldRef writes a payload field as a jq path: .email, or .["first name"]
// when the name is not an identifier.
func fieldRef(name string) string {
	if isIdent(name) {
		return "." + name
	}
	return ".[" + strconv.Quote(name) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
