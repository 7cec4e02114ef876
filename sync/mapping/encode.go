package mapping

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
)

// JSON encodes a rendered body as compact JSON with sorted keys; integers,
// large ones included, are written exactly, and NaN as null, as jq does.
func JSON(body any) (out []byte, err error) {
	if _, ok := body.(map[string]any); !ok {
		return nil, notObject(body)
	}
	// gojq's encoder writes exactly the values gojq yields (int, *big.Int,
	// float64…) and panics on any other Go type, which only a caller
	// building a body by hand can hand it: that is an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("encode the body as JSON: %v", r)
		}
	}()
	return gojq.Marshal(body)
}

// Form encodes a rendered body as application/x-www-form-urlencoded in
// Stripe's bracket notation: a[b][c]=v for nested objects, a[0]=x for
// lists, an empty value for null and for an empty object or list (Stripe
// unsets a field sent empty). Keys are sorted, so the same body always
// gives the same bytes.
func Form(body any) ([]byte, error) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, notObject(body)
	}
	e := formEncoder{buf: make([]byte, 0, 256), key: make([]byte, 0, 64)}
	if err := e.object(m); err != nil {
		return nil, err
	}
	return e.buf, nil
}

func notObject(body any) error {
	return fmt.Errorf("a request body is an object of fields; this one is %s", kindOf(body))
}

// formEncoder appends key=value pairs to buf; key is the current key,
// unescaped, as brackets are added and removed on the way down the body.
type formEncoder struct {
	buf []byte
	key []byte
}

// begin starts the pair for the current key, up to the "=".
func (e *formEncoder) begin() {
	if len(e.buf) > 0 {
		e.buf = append(e.buf, '&')
	}
	e.buf = appendEscaped(e.buf, e.key, true)
	e.buf = append(e.buf, '=')
}

func (e *formEncoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.begin()
	case bool:
		e.begin()
		e.buf = strconv.AppendBool(e.buf, x)
	case int:
		e.begin()
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case *big.Int:
		e.begin()
		e.buf = x.Append(e.buf, 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("form field %s: %v is not a number a form can carry", e.key, x)
		}
		e.begin()
		// 'f' never writes an exponent, and -1 the fewest digits that
		// read back as the same number: 1999, not 1.999e+03 or 1999.0.
		e.buf = strconv.AppendFloat(e.buf, x, 'f', -1, 64)
	case json.Number:
		return e.value(number(string(x)))
	case string:
		e.begin()
		e.buf = appendEscaped(e.buf, x, false)
	case map[string]any:
		return e.object(x)
	case []any:
		return e.list(x)
	default:
		return fmt.Errorf("form field %s: cannot encode a Go %T", e.key, v)
	}
	return nil
}

func (e *formEncoder) object(m map[string]any) error {
	if len(m) == 0 {
		if len(e.key) > 0 {
			e.begin()
		}
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	top, n := len(e.key) == 0, len(e.key)
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, "[]") {
			return fmt.Errorf("form field %s: the key %q cannot be written in bracket notation (it is empty or has a square bracket)", e.key, k)
		}
		if top {
			e.key = append(e.key, k...)
		} else {
			e.key = append(append(append(e.key, '['), k...), ']')
		}
		if err := e.value(m[k]); err != nil {
			return err
		}
		e.key = e.key[:n]
	}
	return nil
}

func (e *formEncoder) list(l []any) error {
	if len(l) == 0 {
		e.begin()
		return nil
	}
	n := len(e.key)
	for i, v := range l {
		e.key = append(strconv.AppendInt(append(e.key, '['), int64(i), 10), ']')
		if err := e.value(v); err != nil {
			return err
		}
		e.key = e.key[:n]
	}
	return nil
}

// appendEscaped appends s escaped as url.QueryEscape does (space as +,
// everything but letters, digits and -_.~ as %XX), without allocating.
// Brackets in keys stay as they are, as Stripe's own libraries send them.
func appendEscaped[S string | []byte](dst []byte, s S, brackets bool) []byte {
	const hex = "0123456789ABCDEF"
	for i := range len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~':
			dst = append(dst, c)
		case c == ' ':
			dst = append(dst, '+')
		case brackets && (c == '[' || c == ']'):
			dst = append(dst, c)
		default:
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}
