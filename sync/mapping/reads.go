package mapping

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
)

// Read is a top-level payload field that a mapping reads, and the target
// whose expression reads it.
type Read struct {
	Field  string // "address" for .address.city
	Target string // "body.properties.email", or "body" for a whole-body expression
	// Optional is set when every read of Field by Target sits left of a
	// default (.nickname // "none"): a payload without the field is fine.
	Optional bool
}

// Reads are found by walking the expression's syntax tree and following
// what each part takes as its input ("."): a field index reads the payload
// only where the input still is the payload. The right side of a pipe, a
// map() body, an update (|=) and a catch see other values, so what they
// index is not a payload field. The analysis is meant to catch misspelt
// fields; reads it cannot place (inside a def, or a computed .[$k]) are
// left out rather than guessed.

// scope says what an expression's input is at one point of the tree.
type scope struct {
	payload  bool // the input is the record's payload
	optional bool // the value sits left of a // default
}

// elsewhere is the scope of an expression whose input is not the payload.
var elsewhere = scope{}

func (s scope) defaulted() scope { return scope{payload: s.payload, optional: true} }

// notPayloadArgs are builtins (name/arity) whose arguments run on something
// other than their input: the elements (map, sort_by…), every node (walk,
// paths), a stream's values (any/2, INDEX/2) or a regexp match (sub's
// replacement), by argument position; -1 means all arguments.
var notPayloadArgs = map[string]int{
	"map/1": -1, "map_values/1": -1, "sort_by/1": -1, "group_by/1": -1, "unique_by/1": -1,
	"min_by/1": -1, "max_by/1": -1, "with_entries/1": -1, "walk/1": -1, "paths/1": -1,
	"any/1": -1, "all/1": -1, "any/2": 1, "all/2": 1, "INDEX/1": -1, "INDEX/2": 1,
	"sub/2": 1, "sub/3": 1, "gsub/2": 1, "gsub/3": 1,
}

// pathArgs are builtins whose argument is a path into the input: naming a
// field there does not need the field to exist.
var pathArgs = map[string]bool{"del": true, "path": true, "pick": true}

type walker struct {
	target string
	defs   map[string]bool // functions the expression defines itself
	reads  []Read
}

func readsOf(target string, q *gojq.Query) []Read {
	w := &walker{target: target, defs: map[string]bool{}}
	w.query(q, scope{payload: true})
	return w.reads
}

func (w *walker) read(field string, s scope) {
	if s.payload {
		w.reads = append(w.reads, Read{Field: field, Target: w.target, Optional: s.optional})
	}
}

func (w *walker) query(q *gojq.Query, s scope) {
	if q == nil {
		return
	}
	for _, fd := range q.FuncDefs {
		w.defs[fd.Name] = true
		w.query(fd.Body, elsewhere) // a def's input is its caller's, unknown here
	}
	if q.Term != nil {
		w.term(q.Term, s)
		return
	}
	left, right := s, s
	switch q.Op {
	case gojq.OpPipe:
		if len(q.Patterns) > 0 {
			w.patterns(q.Left, q.Patterns, s) // E as $x | body: body's input is E's input
		} else {
			right = elsewhere
		}
	case gojq.OpAlt:
		left = s.defaulted()
	case gojq.OpModify:
		left, right = s.defaulted(), elsewhere
	case gojq.OpAssign, gojq.OpUpdateAdd, gojq.OpUpdateSub, gojq.OpUpdateMul,
		gojq.OpUpdateDiv, gojq.OpUpdateMod, gojq.OpUpdateAlt:
		left = s.defaulted() // a path being set need not exist yet
	}
	w.query(q.Left, left)
	w.query(q.Right, right)
}

// patterns reads the keys of a destructuring pattern bound from the
// payload itself: . as {email: $e}.
func (w *walker) patterns(src *gojq.Query, ps []*gojq.Pattern, s scope) {
	if src.Term == nil || src.Term.Type != gojq.TermTypeIdentity || len(src.Term.SuffixList) > 0 {
		return
	}
	for _, p := range ps {
		for _, po := range p.Object {
			switch {
			case po.Key != "":
				w.read(strings.TrimPrefix(po.Key, "$"), s)
			case po.KeyString != nil && po.KeyString.Queries == nil:
				w.read(po.KeyString.Str, s)
			}
		}
	}
}

func (w *walker) term(t *gojq.Term, s scope) {
	switch t.Type {
	case gojq.TermTypeIndex:
		w.index(t.Index, s)
	case gojq.TermTypeFunc:
		w.call(t.Func, s)
	case gojq.TermTypeObject:
		w.object(t.Object, s)
	case gojq.TermTypeArray:
		w.query(t.Array.Query, s)
	case gojq.TermTypeUnary:
		w.term(t.Unary.Term, s)
	case gojq.TermTypeFormat, gojq.TermTypeString:
		w.str(t.Str, s)
	case gojq.TermTypeIf:
		w.ifThen(t.If, s)
	case gojq.TermTypeTry:
		w.query(t.Try.Body, s)
		w.query(t.Try.Catch, elsewhere) // a catch's input is the error
	case gojq.TermTypeReduce:
		w.query(t.Reduce.Query, s)
		w.query(t.Reduce.Start, s)
		w.query(t.Reduce.Update, elsewhere) // the update's input is the accumulator
	case gojq.TermTypeForeach:
		w.query(t.Foreach.Query, s)
		w.query(t.Foreach.Start, s)
		w.query(t.Foreach.Update, elsewhere)
		w.query(t.Foreach.Extract, elsewhere)
	case gojq.TermTypeLabel:
		w.query(t.Label.Body, s)
	case gojq.TermTypeQuery:
		w.query(t.Query, s)
	}
	// .a[.n]: what stands between brackets sees the term's own input.
	for _, suf := range t.SuffixList {
		if suf.Index != nil {
			w.indexArgs(suf.Index, s)
		}
	}
}

// index reads the field an index names on the input: .email, ."email",
// .["email"].
func (w *walker) index(ix *gojq.Index, s scope) {
	switch {
	case ix.Name != "":
		w.read(ix.Name, s)
	case ix.Str != nil && ix.Str.Queries == nil:
		w.read(ix.Str.Str, s)
	case !ix.IsSlice && ix.End == nil:
		if name, ok := constString(ix.Start); ok {
			w.read(name, s)
		}
	}
	w.indexArgs(ix, s)
}

func (w *walker) indexArgs(ix *gojq.Index, s scope) {
	if ix.Str != nil {
		w.str(ix.Str, s)
	}
	w.query(ix.Start, s)
	w.query(ix.End, s)
}

func constString(q *gojq.Query) (string, bool) {
	if q == nil || q.Term == nil || q.Term.Type != gojq.TermTypeString || len(q.Term.SuffixList) > 0 {
		return "", false
	}
	if q.Term.Str.Queries != nil {
		return "", false
	}
	return q.Term.Str.Str, true
}

func (w *walker) call(f *gojq.Func, s scope) {
	if strings.HasPrefix(f.Name, "$") {
		return // a variable
	}
	if w.defs[f.Name] {
		for _, a := range f.Args {
			w.query(a, elsewhere) // our own def decides its arguments' input
		}
		return
	}
	pos, found := notPayloadArgs[f.Name+"/"+strconv.Itoa(len(f.Args))]
	for i, a := range f.Args {
		switch {
		case found && (pos == -1 || pos == i):
			w.query(a, elsewhere)
		case pathArgs[f.Name]:
			w.query(a, s.defaulted())
		default:
			w.query(a, s)
		}
	}
}

func (w *walker) object(o *gojq.Object, s scope) {
	for _, kv := range o.KeyVals {
		if kv.Val == nil { // {email} is {email: .email}
			switch {
			case kv.Key != "" && !strings.HasPrefix(kv.Key, "$"):
				w.read(kv.Key, s)
			case kv.KeyString != nil && kv.KeyString.Queries == nil:
				w.read(kv.KeyString.Str, s)
			}
		}
		if kv.KeyString != nil {
			w.str(kv.KeyString, s)
		}
		w.query(kv.KeyQuery, s)
		w.query(kv.Val, s)
	}
}

func (w *walker) str(st *gojq.String, s scope) {
	if st == nil {
		return
	}
	for _, q := range st.Queries {
		w.query(q, s)
	}
}

func (w *walker) ifThen(f *gojq.If, s scope) {
	w.query(f.Cond, s)
	w.query(f.Then, s)
	for _, e := range f.Elif {
		w.query(e.Cond, s)
		w.query(e.Then, s)
	}
	w.query(f.Else, s)
}

// mergeReads sorts reads and keeps one per field and target, optional only
// if every read of it was.
func mergeReads(reads []Read) []Read {
	slices.SortFunc(reads, func(a, b Read) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Target, b.Target), cmp.Compare(b2i(a.Optional), b2i(b.Optional)))
	})
	// After sorting, a required read comes first among its equals.
	return slices.CompactFunc(reads, func(a, b Read) bool { return a.Field == b.Field && a.Target == b.Target })
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
