package redact

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// decoderWalker is the walker as it was, on encoding/json's Decoder: the
// reference FuzzWalker holds the byte walker to.
type decoderWalker struct {
	r   *Redactor
	dec *json.Decoder
	// openFrom is where closing brackets added after a cut start (see
	// JSONPrefix); -1 when the document is whole.
	openFrom int64
}

func (r *Redactor) walkByDecoder(doc []byte, openFrom int64) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	w := &decoderWalker{r: r, dec: dec, openFrom: openFrom}
	return w.value()
}

// value reads one value and returns it redacted and encoded.
func (w *decoderWalker) value() ([]byte, error) {
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
		return r.literal([]byte(t.String())), nil
	case bool:
		if t {
			return r.literal([]byte("true")), nil
		}
		return r.literal([]byte("false")), nil
	default:
		return r.literal([]byte("null")), nil
	}
}

func (w *decoderWalker) object() ([]byte, error) {
	var members []member
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		key = w.r.maskKnown(key)
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
func (w *decoderWalker) memberValue(key string) ([]byte, error) {
	if !w.r.Sensitive(key) {
		return w.value()
	}
	var skip json.RawMessage
	if err := w.dec.Decode(&skip); err != nil {
		return nil, err
	}
	return redactedJSON, nil
}

func (w *decoderWalker) array() ([]byte, error) {
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

func FuzzWalker(f *testing.F) {
	for _, s := range []string{
		`{"a":{"b":[{"c":{"password":"x","n":1.50}}]},"tokenizer_version":"v2"}`,
		`[1,2.0,-3e10,12345678901234567890,4242424242424242,"4242 4242 4242 4242"]`,
		`{"fields":[{"name":"email","value":{"x":1}},{"key":"pan","values":[1]}]}`,
		`{"payload":"{\"cardNumber\":\"x\"}","s":" [ 1 ] ","t":"[card] x"}`,
		`{"z":1,"z":2,"<&>":"\u00e9\ud83d\ude00", "bad":"\xff", "ctl":"a\u0001\n"}`,
		" [ {\"secret\" : {\"a\":[1,{\"b\":\"}\"}]}} , \"x\" , true,false , null] ",
		`"\u2028 Bearer abcdefgh12"`, `{}`, `[]`, `0`,
	} {
		f.Add([]byte(s), -1)
	}
	r := fuzzRedactor()
	f.Fuzz(func(t *testing.T, doc []byte, openFrom int) {
		if !json.Valid(doc) {
			return
		}
		openFrom = max(-1, openFrom)
		want, err := r.walkByDecoder(doc, int64(openFrom))
		require.NoError(t, err)
		got, err := r.walk(doc, openFrom)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "the byte walker differs from the Decoder's on %q", doc)
	})
}
