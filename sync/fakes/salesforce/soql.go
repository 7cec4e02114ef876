package salesforce

import (
	"fmt"
	"strconv"
	"strings"
)

// The fake understands this much SOQL, which is what a sync engine lists
// and looks up with:
//
//	SELECT field, … FROM Object
//	  [WHERE field = value [AND field != value …]]
//	  [ORDER BY field [ASC|DESC]] [LIMIT n]
//
// Values are 'quoted strings' (with backslash escapes), numbers, true,
// false or null. Keywords and names are case-insensitive. Anything else is
// a MALFORMED_QUERY, as Salesforce answers an invalid q.
// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select.htm
// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_quotedstringescapes.htm

// soql is a parsed query.
type soql struct {
	fields  []string
	object  string
	where   []condition
	orderBy string
	desc    bool
	limit   int // -1: none
}

// condition is one field expression of the WHERE clause.
type condition struct {
	field string
	not   bool    // != rather than =
	value *string // nil is null
}

// tok is one lexical token.
type tok struct {
	kind byte // 'i' identifier or keyword, 's' string, 'n' number, or the punctuation itself: ',' '=' '!'
	text string
}

// parseSOQL reads q, or says what is wrong with it.
func parseSOQL(q string) (soql, error) {
	toks, err := lex(q)
	if err != nil {
		return soql{}, err
	}
	p := &parser{toks: toks}
	return p.query()
}

type parser struct {
	toks []tok
	pos  int
}

func (p *parser) query() (soql, error) {
	out := soql{limit: -1}
	if err := p.keyword("SELECT"); err != nil {
		return out, err
	}
	var err error
	if out.fields, err = p.fieldList(); err != nil {
		return out, err
	}
	if out.object, err = p.afterKeyword("FROM"); err != nil {
		return out, err
	}
	if p.peekKeyword("WHERE") {
		p.pos++
		if out.where, err = p.conditions(); err != nil {
			return out, err
		}
	}
	if p.peekKeyword("ORDER") {
		p.pos++
		if out.orderBy, err = p.afterKeyword("BY"); err != nil {
			return out, err
		}
		out.desc = p.direction()
	}
	if p.peekKeyword("LIMIT") {
		p.pos++
		if out.limit, err = p.number(); err != nil {
			return out, err
		}
	}
	if p.pos < len(p.toks) {
		return out, unexpected(p.toks[p.pos])
	}
	return out, nil
}

// fieldList reads "a, b, c".
func (p *parser) fieldList() ([]string, error) {
	var fields []string
	for {
		f, err := p.ident()
		if err != nil {
			return nil, err
		}
		fields = append(fields, f)
		if !p.peek(',') {
			return fields, nil
		}
		p.pos++
	}
}

// conditions reads "f = v AND g != w …".
func (p *parser) conditions() ([]condition, error) {
	var out []condition
	for {
		c, err := p.condition()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		if !p.peekKeyword("AND") {
			return out, nil
		}
		p.pos++
	}
}

func (p *parser) condition() (condition, error) {
	field, err := p.ident()
	if err != nil {
		return condition{}, err
	}
	c := condition{field: field}
	switch {
	case p.peek('='):
		p.pos++
	case p.peek('!'):
		c.not = true
		p.pos++
	default:
		return c, p.unexpectedHere()
	}
	c.value, err = p.value()
	return c, err
}

// value reads a literal; null is nil.
func (p *parser) value() (*string, error) {
	if p.pos >= len(p.toks) {
		return nil, p.unexpectedHere()
	}
	t := p.toks[p.pos]
	p.pos++
	switch {
	case t.kind == 's' || t.kind == 'n':
		return &t.text, nil
	case t.kind == 'i' && strings.EqualFold(t.text, "null"):
		return nil, nil
	case t.kind == 'i' && (strings.EqualFold(t.text, "true") || strings.EqualFold(t.text, "false")):
		v := strings.ToLower(t.text)
		return &v, nil
	}
	return nil, unexpected(t)
}

func (p *parser) direction() bool {
	switch {
	case p.peekKeyword("DESC"):
		p.pos++
		return true
	case p.peekKeyword("ASC"):
		p.pos++
	}
	return false
}

func (p *parser) number() (int, error) {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == 'n' {
		n, err := strconv.Atoi(p.toks[p.pos].text)
		if err == nil && n >= 0 {
			p.pos++
			return n, nil
		}
	}
	return 0, p.unexpectedHere()
}

// afterKeyword reads a keyword and the name after it.
func (p *parser) afterKeyword(kw string) (string, error) {
	if err := p.keyword(kw); err != nil {
		return "", err
	}
	return p.ident()
}

func (p *parser) keyword(kw string) error {
	if !p.peekKeyword(kw) {
		return p.unexpectedHere()
	}
	p.pos++
	return nil
}

// reserved words cannot be field or object names.
var reserved = map[string]bool{"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true,
	"ORDER": true, "BY": true, "LIMIT": true, "ASC": true, "DESC": true, "NULL": true, "NOT": true}

func (p *parser) ident() (string, error) {
	if p.pos < len(p.toks) {
		if t := p.toks[p.pos]; t.kind == 'i' && !reserved[strings.ToUpper(t.text)] {
			p.pos++
			return t.text, nil
		}
	}
	return "", p.unexpectedHere()
}

func (p *parser) peek(kind byte) bool {
	return p.pos < len(p.toks) && p.toks[p.pos].kind == kind
}

func (p *parser) peekKeyword(kw string) bool {
	return p.peek('i') && strings.EqualFold(p.toks[p.pos].text, kw)
}

func (p *parser) unexpectedHere() error {
	if p.pos >= len(p.toks) {
		return fmt.Errorf("unexpected end of query")
	}
	return unexpected(p.toks[p.pos])
}

func unexpected(t tok) error { return fmt.Errorf("unexpected token: '%s'", t.text) }

// lex splits q into tokens.
func lex(q string) ([]tok, error) {
	var toks []tok
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == ',' || c == '=':
			toks = append(toks, tok{c, string(c)})
			i++
		case c == '!' && i+1 < len(q) && q[i+1] == '=':
			toks = append(toks, tok{'!', "!="})
			i += 2
		case c == '\'':
			s, n, err := quoted(q[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, tok{'s', s})
			i += n
		case c == '-' || isDigit(c):
			n := number(q[i:])
			if n == 0 {
				return nil, fmt.Errorf("unexpected token: '%c'", c)
			}
			toks = append(toks, tok{'n', q[i : i+n]})
			i += n
		case isLetter(c):
			n := 1
			for n < len(q[i:]) && (isLetter(q[i+n]) || isDigit(q[i+n])) {
				n++
			}
			toks = append(toks, tok{'i', q[i : i+n]})
			i += n
		default:
			return nil, fmt.Errorf("unexpected token: '%c'", c)
		}
	}
	return toks, nil
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }

// number is the length of the number at the start of s: -?digits(.digits)?
func number(s string) int {
	n := 0
	if n < len(s) && s[n] == '-' {
		n++
	}
	digits := func() int {
		start := n
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		return n - start
	}
	if digits() == 0 {
		return 0
	}
	if n+1 < len(s) && s[n] == '.' && isDigit(s[n+1]) {
		n++
		digits()
	}
	return n
}

// quoted reads a 'string' at the start of s, with SOQL's backslash
// escapes, and says how many bytes it took.
func quoted(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\'':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 >= len(s) {
				return "", 0, fmt.Errorf("unterminated string")
			}
			i++
			e, ok := escapes[s[i]]
			if !ok {
				return "", 0, fmt.Errorf("invalid escape sequence: '\\%c'", s[i])
			}
			b.WriteByte(e)
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}

// escapes are SOQL's escape sequences in quoted strings (\_ and \% belong
// to LIKE, which the fake does not take).
var escapes = map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f', '"': '"', '\'': '\'', '\\': '\\'}
