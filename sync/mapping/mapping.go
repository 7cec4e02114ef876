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
	"maps"
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

// target is where one expression's value goes in the body.
type target struct {
	name string   // "body.properties.email"
	path []string // ["properties", "email"]; nil for the whole body
}

// Mapping is a compiled body mapping, safe for concurrent use.
type Mapping struct {
	// code runs every target's expression in one go, as the stream
	// E1, $end, E2, $end, …: one gojq run per record instead of one per
	// field (a run's setup costs more than a renamed field), while each
	// value and each error is still known to come from its own target.
	code     *gojq.Code
	targets  []target // in the order of the stream, sorted by name
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
	q, reads, err := compileTarget("body", expr)
	if err != nil {
		return nil, err
	}
	return newMapping([]target{{name: "body"}}, []*gojq.Query{q}, true, reads)
}

func compileFields(fields map[string]string) (*Mapping, error) {
	keys := slices.Sorted(maps.Keys(fields))
	if err := checkPaths(keys); err != nil {
		return nil, err
	}
	targets := make([]target, 0, len(keys))
	queries := make([]*gojq.Query, 0, len(keys))
	var reads []Read
	for _, k := range keys {
		q, rs, err := compileTarget("body."+k, fields[k])
		if err != nil {
			return nil, err
		}
		targets = append(targets, target{name: "body." + k, path: strings.Split(k, ".")})
		queries = append(queries, q)
		reads = append(reads, rs...)
	}
	return newMapping(targets, queries, false, reads)
}

func newMapping(targets []target, queries []*gojq.Query, whole bool, reads []Read) (*Mapping, error) {
	code, err := gojq.Compile(stream(queries), gojq.WithVariables(append(slices.Clone(varNames), endVar)))
	if err != nil { // each expression compiled on its own, so this is our fault
		return nil, &Error{Target: "body", Reason: "the expressions do not compile together", Err: err}
	}
	reads = mergeReads(reads)
	m := &Mapping{code: code, targets: targets, whole: whole, reads: reads}
	for _, r := range reads {
		if !r.Optional {
			m.required = append(m.required, r)
		}
	}
	return m, nil
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

// compileTarget parses and compiles one expression on its own, so that an
// error names its target, and finds what it reads.
func compileTarget(name, src string) (*gojq.Query, []Read, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil, &Error{Target: name, Reason: "the expression is empty"}
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, nil, &Error{Target: name, Reason: parseReason(src, err)}
	}
	if len(q.Imports) > 0 || q.Meta != nil {
		return nil, nil, &Error{Target: name, Reason: "modules and imports are not supported in a body mapping"}
	}
	if _, err := gojq.Compile(q, gojq.WithVariables(varNames)); err != nil {
		return nil, nil, &Error{Target: name, Reason: compileReason(err)}
	}
	return q, readsOf(name, q), nil
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
