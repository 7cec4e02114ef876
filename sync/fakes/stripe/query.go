package stripe

import (
	"fmt"
	"strconv"
	"strings"
)

// The search query language (https://docs.stripe.com/search#search-query-language):
// a clause is a field, an operator and a value, as email:"amy@rocketrides.io"
// or metadata["key"]:"value"; clauses are joined by spaces or AND, or by
// OR, but AND and OR never mix; "-" before a clause negates it; ":" is an
// exact match, "~" a substring match of at least three characters on a
// string field, and > < = >= <= compare numeric fields; null matches a field
// that has no value. Strings are quoted with ' or ", and \ escapes a quote
// inside them. A query has at most 10 clauses.

// qField is the type of a query field.
type qField int

const (
	qString qField = iota
	qNumber
)

// maxClauses is the most clauses one query may hold.
const maxClauses = 10

// clause is one parsed condition.
type clause struct {
	neg   bool
	field string // metadata for metadata["key"]
	key   string // the metadata key
	op    string // : ~ > < = >= <=
	value string
	null  bool // the value was the bare word null
}

// query is a parsed search query.
type query struct {
	clauses []clause
	or      bool
}

// parseQuery parses q against the query fields of one resource.
func parseQuery(q string, fieldsOf map[string]qField, object string) (query, error) {
	var out query
	joins := map[string]bool{}
	s := strings.TrimSpace(q)
	for s != "" {
		if len(out.clauses) > 0 {
			word, rest := cutWord(s)
			if u := strings.ToUpper(word); u == "AND" || u == "OR" {
				joins[u] = true
				s = strings.TrimSpace(rest)
			}
		}
		c, rest, err := parseClause(s, fieldsOf, object)
		if err != nil {
			return query{}, err
		}
		out.clauses = append(out.clauses, c)
		s = strings.TrimSpace(rest)
	}
	switch {
	case len(out.clauses) == 0:
		return query{}, fmt.Errorf("the query is empty")
	case len(out.clauses) > maxClauses:
		return query{}, fmt.Errorf("the query has %d clauses; at most %d are allowed", len(out.clauses), maxClauses)
	case joins["AND"] && joins["OR"]:
		return query{}, fmt.Errorf("AND and OR cannot be combined in one query")
	}
	out.or = joins["OR"]
	return out, nil
}

// cutWord splits off the first space-separated word.
func cutWord(s string) (string, string) {
	if i := strings.IndexAny(s, " \t\n"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// parseClause reads one clause from the start of s.
func parseClause(s string, fieldsOf map[string]qField, object string) (clause, string, error) {
	var c clause
	if strings.HasPrefix(s, "-") {
		c.neg, s = true, s[1:]
	}
	end := strings.IndexAny(s, ":~<>=[ ")
	if end <= 0 {
		return c, "", fmt.Errorf("expected a clause such as email:'jenny@example.com' at %q", s)
	}
	c.field, s = s[:end], s[end:]
	typ, ok := fieldsOf[c.field]
	if !ok {
		return c, "", fmt.Errorf("%q is not a search field of %s", c.field, object)
	}
	if c.field == "metadata" {
		if !strings.HasPrefix(s, "[") {
			return c, "", fmt.Errorf("metadata needs a key, as in metadata['order_id']:'6735'")
		}
		key, rest, err := quoted(s[1:])
		if err != nil || !strings.HasPrefix(rest, "]") {
			return c, "", fmt.Errorf("metadata needs a quoted key in brackets, as in metadata['order_id']")
		}
		c.key, s = key, rest[1:]
	}
	c.op, s = operator(s)
	if c.op == "" {
		return c, "", fmt.Errorf("expected an operator (: ~ > < = >= <=) after %s", c.field)
	}
	rest, err := c.readValue(s)
	if err != nil {
		return c, "", err
	}
	return c, rest, c.check(typ)
}

// operator reads the operator at the start of s.
func operator(s string) (string, string) {
	for _, op := range []string{">=", "<=", ":", "~", ">", "<", "="} {
		if strings.HasPrefix(s, op) {
			return op, s[len(op):]
		}
	}
	return "", s
}

// readValue reads a quoted string, a bare number or null.
func (c *clause) readValue(s string) (string, error) {
	if strings.HasPrefix(s, "'") || strings.HasPrefix(s, `"`) {
		v, rest, err := quoted(s)
		c.value = v
		return rest, err
	}
	word, rest := cutWord(s)
	if word == "" {
		return "", fmt.Errorf("%s%s needs a value", c.field, c.op)
	}
	c.value, c.null = word, word == "null"
	return rest, nil
}

// check applies what each operator allows on a field of typ.
func (c clause) check(typ qField) error {
	switch {
	case c.null && c.op != ":":
		return fmt.Errorf("null can only be matched with ':'")
	case c.op == "~" && typ != qString:
		return fmt.Errorf("%s is not a string field: '~' does not apply", c.field)
	case c.op == "~" && len([]rune(c.value)) < 3:
		return fmt.Errorf("a substring match needs at least 3 characters, got %q", c.value)
	case c.op != ":" && c.op != "~" && typ != qNumber:
		return fmt.Errorf("%s is not a numeric field: '%s' does not apply", c.field, c.op)
	}
	if typ == qNumber && !c.null {
		if _, err := strconv.ParseInt(c.value, 10, 64); err != nil {
			return fmt.Errorf("%s is numeric: %q is not a number", c.field, c.value)
		}
	}
	return nil
}

// quoted reads a '…' or "…" string from the start of s.
func quoted(s string) (string, string, error) {
	if s == "" || (s[0] != '\'' && s[0] != '"') {
		return "", s, fmt.Errorf("expected a quoted string at %q", s)
	}
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case s[i] == q:
			return b.String(), s[i+1:], nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", fmt.Errorf("a quoted string is not closed: %s", s)
}

// matches reports whether obj satisfies the query.
func (q query) matches(obj map[string]any) bool {
	for _, c := range q.clauses {
		ok := c.matches(obj) != c.neg
		if q.or && ok {
			return true
		}
		if !q.or && !ok {
			return false
		}
	}
	return !q.or
}

// matches tests one clause. Strings match without regard to case, but
// metadata values exactly, since they are the caller's own keys.
func (c clause) matches(obj map[string]any) bool {
	v := obj[c.field]
	if c.field == "metadata" {
		m, _ := v.(map[string]any)
		v = m[c.key]
	}
	if c.null {
		return v == nil || v == ""
	}
	if n, isNum := toInt(v); isNum {
		want, _ := strconv.ParseInt(c.value, 10, 64)
		switch c.op {
		case ">":
			return n > want
		case "<":
			return n < want
		case ">=":
			return n >= want
		case "<=":
			return n <= want
		}
		return n == want // : and =
	}
	s, ok := v.(string)
	switch {
	case !ok:
		return false
	case c.op == "~":
		return strings.Contains(strings.ToLower(s), strings.ToLower(c.value))
	case c.field == "metadata":
		return s == c.value
	}
	return strings.EqualFold(s, c.value)
}

// toInt reads a stored number.
func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}
