package mapping

import (
	"bytes"
	"encoding/json"

	"github.com/itchyny/gojq"
)

// Expr is one compiled expression that reads a value out of a document —
// where a webhook event keeps its id, our key or a field's new value. It
// is safe for concurrent use.
type Expr struct {
	src  string
	code *gojq.Code
}

// CompileExpr compiles src; name is what an error calls it (the setting).
func CompileExpr(name, src string) (*Expr, error) {
	q, _, err := compileTarget(name, src)
	if err != nil {
		return nil, err
	}
	code, err := gojq.Compile(q, gojq.WithVariables(varNames))
	if err != nil { // compileTarget compiled it already
		return nil, &Error{Target: name, Reason: compileReason(err)}
	}
	return &Expr{src: src, code: code}, nil
}

// String is the expression as written.
func (e *Expr) String() string { return e.src }

// Eval evaluates the expression on doc (as Decode gives it) and returns its
// one value. An expression that yields nothing or null finds nothing
// (ok false); one that fails, runs away or yields several values is an
// error.
func (e *Expr) Eval(doc any) (v any, ok bool, err error) {
	b := newBudget()
	iter := e.code.RunWithContext(b, doc, "", "", "", "")
	for {
		val, more := iter.Next()
		if !more {
			return v, v != nil, nil
		}
		if err, isErr := val.(error); isErr {
			t := target{name: e.src}
			return nil, false, t.failure(b, err)
		}
		if ok {
			return nil, false, &Error{Target: e.src, Reason: "the expression yields more than one value"}
		}
		v, ok = val, true
	}
}

// Decode reads the JSON value (an object, a list, anything) that raw
// starts with as expressions see it: integers stay exact. What follows the
// value is not read: a webhook's signature covers its bytes, and the inbox
// has always taken the document and left trailing junk alone.
func Decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return normalize(v), nil
}

// Text is a found value as text: strings as they are, numbers in full
// (an id beyond 2^53 stays exact), anything else as JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	out, err := gojq.Marshal(v)
	if err != nil {
		return ""
	}
	return string(out)
}
