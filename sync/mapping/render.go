package mapping

import (
	"errors"
	"math/big"

	"github.com/itchyny/gojq"
)

// endVar is bound to end, the value that closes each target's part of the
// stream. No expression can name it: each is compiled alone first, with
// only the variables of Vars.
const endVar = "$__syncdesk_end"

// end is told apart by its pointer, which no expression can produce.
var end any = new(big.Int).Lsh(big.NewInt(1), 100)

// stream joins the expressions as (E1), $end, (E2), $end, …
func stream(queries []*gojq.Query) *gojq.Query {
	endTerm := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: endVar}}}
	var s *gojq.Query
	for i := len(queries) - 1; i >= 0; i-- {
		part := &gojq.Query{
			Left:  &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeQuery, Query: queries[i]}},
			Op:    gojq.OpComma,
			Right: endTerm,
		}
		if s != nil {
			part = &gojq.Query{Left: part, Op: gojq.OpComma, Right: s}
		}
		s = part
	}
	return s
}

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
	values, err := m.run(doc, v)
	if err != nil {
		return nil, err
	}
	if m.whole {
		if _, ok := values[0].(map[string]any); !ok {
			return nil, &Error{Target: "body", Reason: "the expression yields " + gojq.TypeOf(values[0]) + ", not the object a body is"}
		}
		return values[0], nil
	}
	body := make(map[string]any, len(m.targets))
	for i, t := range m.targets {
		place(body, t.path, values[i])
	}
	return body, nil
}

// run evaluates the stream and gives one value per target, in order.
func (m *Mapping) run(doc map[string]any, v Vars) ([]any, error) {
	b := newBudget()
	iter := m.code.RunWithContext(b, doc, v.Key, v.LocalID, v.LocalType, v.ExternalID, end)
	values := make([]any, len(m.targets))
	i, seen := 0, 0 // the target whose values come now, and how many it gave
	for i < len(m.targets) {
		t := &m.targets[i]
		val, ok := iter.Next()
		switch {
		case !ok: // cannot happen: every part of the stream ends with $end
			return nil, &Error{Target: t.name, Reason: "the expressions stopped early"}
		case val == end && seen == 0:
			return nil, &Error{Target: t.name, Reason: "the expression yields no value"}
		case val == end:
			i, seen = i+1, 0
			continue
		}
		if err, isErr := val.(error); isErr {
			return nil, t.failure(b, err)
		}
		if seen++; seen > 1 {
			return nil, &Error{Target: t.name, Reason: "the expression yields more than one value; a body field takes exactly one"}
		}
		values[i] = val
	}
	return values, nil
}

func (t *target) failure(b *budget, err error) error {
	if errors.Is(err, ErrRunaway) {
		return &Error{Target: t.name, Reason: "the expression ran " + b.spent, Err: err}
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
