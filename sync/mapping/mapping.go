// Package mapping builds a provider's request body from a record's payload
// with declarative gojq expressions (a map of target paths, or one
// expression for the whole body), and encodes the body as JSON or as a form
// in Stripe's bracket notation.
//
// It knows nothing of the configuration file: config compiles mappings at
// start so that a bad expression stops syncdesk before any record is sent.
package mapping

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/itchyny/gojq"
)

// varNames are the variables every expression may use, in the order Vars
// gives their values to gojq.
var varNames = []string{"$key", "$local_id", "$local_type", "$external_id"}

// Vars are the values an expression sees besides the payload.
type Vars struct {
	Key        string // $key: our external key for the record
	LocalID    string // $local_id: the record's id in the business system
	LocalType  string // $local_type: the record's type, e.g. customer
	ExternalID string // $external_id: the provider's id, empty before the first create
}

// Error is a mapping failure, naming the body target it concerns
// ("body.properties.email", or "body" for a whole-body expression).
type Error struct {
	Target string // the target key, prefixed with "body"
	Reason string // what went wrong, in words
	Err    error  // the underlying cause, if any
}

// Error says the target, then the reason.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Target + ": " + e.Reason + ": " + e.Err.Error()
	}
	return e.Target + ": " + e.Reason
}

// Unwrap gives the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// target is one compiled expression and where its value goes in the body.
type target struct {
	name string   // "body.properties.email"
	path []string // ["properties", "email"]; nil for the whole body
	code *gojq.Code
}

// Mapping is a compiled body mapping, safe for concurrent use.
type Mapping struct {
	targets  []target // sorted by name
	whole    bool     // one expression yields the whole body
	reads    []Read
	required []Read // the reads a payload must have, checked by Render
}

// Compile builds a mapping from a map of dotted target paths to gojq
// expressions, or from one expression yielding the whole body; exactly one
// of fields and expr must be given. Errors name the target.
func Compile(fields map[string]string, expr string) (*Mapping, error) {
	switch {
	case len(fields) > 0 && expr != "":
		return nil, &Error{Target: "body", Reason: "give either a map of fields or one expression, not both"}
	case len(fields) == 0 && expr == "":
		return nil, &Error{Target: "body", Reason: "give a map of fields or one expression"}
	case expr != "":
		return compileWhole(expr)
	}
	return compileFields(fields)
}

func compileWhole(expr string) (*Mapping, error) {
	t, reads, err := compileTarget("body", nil, expr)
	if err != nil {
		return nil, err
	}
	return newMapping([]target{t}, true, reads), nil
}

func compileFields(fields map[string]string) (*Mapping, error) {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range fields {
			if !yield(k) {
				return
			}
		}
	})
	if err := checkPaths(keys); err != nil {
		return nil, err
	}
	targets := make([]target, 0, len(keys))
	var reads []Read
	for _, k := range keys {
		t, rs, err := compileTarget("body."+k, strings.Split(k, "."), fields[k])
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
		reads = append(reads, rs...)
	}
	return newMapping(targets, false, reads), nil
}

func newMapping(targets []target, whole bool, reads []Read) *Mapping {
	reads = mergeReads(reads)
	m := &Mapping{targets: targets, whole: whole, reads: reads}
	for _, r := range reads {
		if !r.Optional {
			m.required = append(m.required, r)
		}
	}
	return m
}

// checkPaths refuses empty segments and two targets of which one lies
// inside the other ("a" and "a.b"): the body could hold only one of them.
func checkPaths(keys []string) error {
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		if slices.Contains(strings.Split(k, "."), "") {
			return &Error{Target: "body." + k, Reason: "a target path is names joined by dots, with no empty name"}
		}
		set[k] = true
	}
	for _, k := range keys {
		for i := range len(k) {
			if k[i] == '.' && set[k[:i]] {
				return &Error{Target: "body." + k, Reason: fmt.Sprintf("lies inside body.%s, which is set too; keep one of them", k[:i])}
			}
		}
	}
	return nil
}

// compileTarget parses and compiles one expression and finds what it reads.
func compileTarget(name string, path []string, src string) (target, []Read, error) {
	if strings.TrimSpace(src) == "" {
		return target{}, nil, &Error{Target: name, Reason: "the expression is empty"}
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return target{}, nil, &Error{Target: name, Reason: parseReason(src, err)}
	}
	if len(q.Imports) > 0 || q.Meta != nil {
		return target{}, nil, &Error{Target: name, Reason: "modules and imports are not supported in a body mapping"}
	}
	code, err := gojq.Compile(q, gojq.WithVariables(varNames))
	if err != nil {
		return target{}, nil, &Error{Target: name, Reason: compileReason(err)}
	}
	return target{name: name, path: path, code: code}, readsOf(name, q), nil
}

func parseReason(src string, err error) string {
	var pe *gojq.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("the expression %q does not parse: %s after %d characters", src, pe.Error(), pe.Offset)
	}
	return fmt.Sprintf("the expression %q does not parse: %v", src, err)
}

// compileReason rewords gojq's compile errors, whose types are unexported.
func compileReason(err error) string {
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "function not defined: "); ok {
		return "unknown function " + f + " (name/number of arguments)"
	}
	if v, ok := strings.CutPrefix(msg, "variable not defined: "); ok {
		return "unknown variable " + v + " (an expression can use $key, $local_id, $local_type and $external_id)"
	}
	return "the expression does not compile: " + msg
}

// Reads returns the top-level payload fields the mapping reads, sorted by
// field and then target.
func (m *Mapping) Reads() []Read { return slices.Clone(m.reads) }

// Render evaluates the mapping on a record's JSON payload (an object) and
// returns the body, a map[string]any. A payload lacking a field the mapping
// needs, an expression that fails, yields nothing or yields several values,
// and a whole-body expression that yields no object are errors naming the
// target.
func (m *Mapping) Render(payload []byte, v Vars) (any, error) {
	doc, err := decodePayload(payload)
	if err != nil {
		return nil, &Error{Target: "body", Reason: "the record's payload is not a JSON object", Err: err}
	}
	for _, r := range m.required {
		if _, ok := doc[r.Field]; !ok {
			return nil, &Error{Target: r.Target, Reason: "reads " + fieldRef(r.Field) + ", which the record's payload does not have"}
		}
	}
	ctx := newBudget()
	vals := []any{v.Key, v.LocalID, v.LocalType, v.ExternalID}
	if m.whole {
		return m.targets[0].evalObject(ctx, doc, vals)
	}
	body := make(map[string]any, len(m.targets))
	for i := range m.targets {
		t := &m.targets[i]
		val, err := t.eval(ctx, doc, vals)
		if err != nil {
			return nil, err
		}
		place(body, t.path, val)
	}
	return body, nil
}

func (t *target) evalObject(ctx *budget, doc map[string]any, vals []any) (any, error) {
	val, err := t.eval(ctx, doc, vals)
	if err != nil {
		return nil, err
	}
	if _, ok := val.(map[string]any); !ok {
		return nil, &Error{Target: t.name, Reason: "the expression yields " + gojq.TypeOf(val) + ", not the object a body is"}
	}
	return val, nil
}

// eval runs the expression and insists on exactly one value.
func (t *target) eval(ctx *budget, doc map[string]any, vals []any) (any, error) {
	iter := t.code.RunWithContext(ctx, doc, vals...)
	val, ok := iter.Next()
	if !ok {
		return nil, &Error{Target: t.name, Reason: "the expression yields no value"}
	}
	if err, ok := val.(error); ok {
		return nil, t.failure(ctx, err)
	}
	if next, more := iter.Next(); more {
		if err, ok := next.(error); ok {
			return nil, t.failure(ctx, err)
		}
		return nil, &Error{Target: t.name, Reason: "the expression yields more than one value; a body field takes exactly one"}
	}
	return val, nil
}

func (t *target) failure(ctx *budget, err error) error {
	if errors.Is(err, ErrRunaway) {
		return &Error{Target: t.name, Reason: "the expression ran " + ctx.spent, Err: err}
	}
	var halt *gojq.HaltError
	if errors.As(err, &halt) {
		return &Error{Target: t.name, Reason: "the expression stopped with halt", Err: err}
	}
	return &Error{Target: t.name, Reason: "the expression failed", Err: err}
}

// place sets val at path in body, making the objects on the way; Compile
// made sure that no two paths collide.
func place(body map[string]any, path []string, val any) {
	for _, seg := range path[:len(path)-1] {
		next, ok := body[seg].(map[string]any)
		if !ok {
			next = make(map[string]any, 2)
			body[seg] = next
		}
		body = next
	}
	body[path[len(path)-1]] = val
}
