package redact

import (
	"slices"
	"strings"
)

// matcher finds every one of a set of patterns in a text in one pass, ASCII
// letters compared without regard to case: an Aho-Corasick automaton. The
// root's transitions are a table, so that the common case, a byte that
// starts no pattern, costs one lookup; other states keep their few edges in
// a list and fall back along failure links. All states and edges sit in two
// slices, since a matcher is built for every record sent. A matcher is never
// changed once built, so it is safe for concurrent use.
type matcher struct {
	root   [256]int32 // the root's transitions by folded byte; 0 is the root
	states []acState
	edges  []acEdge
}

// acState is one node of the trie: a prefix of at least one pattern.
type acState struct {
	edge  int32 // its first edge in edges, -1 for none
	fail  int32 // the state of the longest proper suffix that is also a prefix
	depth int32 // the length of the prefix
	hit   acHit // the pattern that ends here, if hit.n > 0
	// dict is the nearest state on the failure chain where a pattern ends:
	// the other patterns that end here.
	dict int32
}

// acEdge is one transition, in a list of a state's edges.
type acEdge struct {
	b    byte
	to   int32
	next int32 // the state's next edge, -1 for none
}

// acHit is a pattern that ends at a state: its length, and whether it
// counts only where it stands alone (see standsAlone).
type acHit struct {
	n     int32
	alone bool
}

// pattern is one string to find.
type pattern struct {
	text  string
	alone bool // a match counts only where it is a whole token
}

// newMatcher builds the automaton of pats; nil when there is none.
func newMatcher(pats []pattern) *matcher {
	if len(pats) == 0 {
		return nil
	}
	size := 1
	for _, p := range pats {
		size += len(p.text)
	}
	m := &matcher{states: make([]acState, 1, size), edges: make([]acEdge, 0, size)}
	m.states[0].edge = -1
	for _, p := range pats {
		st := int32(0)
		for i := 0; i < len(p.text); i++ {
			st = m.child(st, fold(p.text[i]))
		}
		// One text may come as two patterns (alone and not): the one that
		// matches anywhere wins.
		if h := &m.states[st].hit; h.n == 0 || h.alone {
			*h = acHit{n: int32(len(p.text)), alone: p.alone}
		}
	}
	m.link()
	return m
}

// edgeOn is the state after st on b in the trie, 0 for none.
func (m *matcher) edgeOn(st int32, b byte) int32 {
	for e := m.states[st].edge; e >= 0; e = m.edges[e].next {
		if m.edges[e].b == b {
			return m.edges[e].to
		}
	}
	return 0
}

// child returns the state after st on b, adding it to the trie if need be.
func (m *matcher) child(st int32, b byte) int32 {
	if to := m.edgeOn(st, b); to != 0 {
		return to
	}
	next := int32(len(m.states))
	m.states = append(m.states, acState{edge: -1, depth: m.states[st].depth + 1})
	m.edges = append(m.edges, acEdge{b: b, to: next, next: m.states[st].edge})
	m.states[st].edge = int32(len(m.edges) - 1)
	if st == 0 {
		m.root[b] = next
	}
	return next
}

// link sets the failure and dictionary links breadth first, so that a
// state's links are final before its children's are computed.
func (m *matcher) link() {
	queue := make([]int32, 0, len(m.states))
	for e := m.states[0].edge; e >= 0; e = m.edges[e].next {
		queue = append(queue, m.edges[e].to)
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for e := m.states[u].edge; e >= 0; e = m.edges[e].next {
			v := m.edges[e].to
			f := int32(0)
			if u != 0 {
				f = m.step(m.states[u].fail, m.edges[e].b)
			}
			if f == v {
				f = 0
			}
			m.states[v].fail = f
			if m.states[f].hit.n > 0 {
				m.states[v].dict = f
			} else {
				m.states[v].dict = m.states[f].dict
			}
			queue = append(queue, v)
		}
	}
}

// step is the state after st on the folded byte b.
func (m *matcher) step(st int32, b byte) int32 {
	for st != 0 {
		if to := m.edgeOn(st, b); to != 0 {
			return to
		}
		st = m.states[st].fail
	}
	return m.root[b]
}

// span is the byte range [start, end) of a match.
type span struct{ start, end int }

// find returns the matches in s, leftmost first and, of those that start
// at one place, the longest, none overlapping another. The masks of this
// package are skipped whole and end any match: no pattern is found in or
// across one, which is what makes masking twice give what masking once does.
func (m *matcher) find(s string) []span {
	var found []span
	st := int32(0)
	for i := 0; i < len(s); {
		if st == 0 { // the common case: skip what starts neither a pattern nor a mask
			for i < len(s) && m.root[fold(s[i])] == 0 && s[i] != '[' {
				i++
			}
			if i == len(s) {
				break
			}
		}
		i, st = m.advance(s, i, st)
		for t := st; t != 0; t = m.states[t].dict {
			if h := m.states[t].hit; h.n > 0 {
				if sp := (span{i - int(h.n), i}); !h.alone || standsAlone(s, sp) {
					found = append(found, sp)
				}
			}
		}
	}
	return leftmostLongest(found)
}

// advance moves past s[i], or past the whole mask s[i:] starts with, which
// takes the automaton back to the root. It returns where it stopped and
// the state there.
func (m *matcher) advance(s string, i int, st int32) (int, int32) {
	if s[i] == '[' {
		if n := maskAt(s[i:]); n > 0 {
			return i + n, 0
		}
	}
	return i + 1, m.step(st, fold(s[i]))
}

// leftmostLongest keeps, of overlapping matches, the one that starts first
// and, of those, the longest.
func leftmostLongest(found []span) []span {
	if len(found) < 2 {
		return found
	}
	slices.SortFunc(found, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	kept := found[:1]
	for _, sp := range found[1:] {
		if sp.start >= kept[len(kept)-1].end {
			kept = append(kept, sp)
		}
	}
	return kept
}

// mask replaces every match in s with "[redacted]"; s itself when none.
func (m *matcher) mask(s string) string {
	spans := m.find(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.start])
		b.WriteString(redacted)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// openTail is the length of the longest end of s that is the beginning of
// a pattern: what a cut may have left of a secret. A pattern that fits
// whole is not counted; find masks it.
func (m *matcher) openTail(s string) int {
	st := int32(0)
	for i := 0; i < len(s); {
		i, st = m.advance(s, i, st)
	}
	return int(m.states[st].depth)
}

// standsAlone reports whether a match is a whole token: no letter, digit or
// underscore, and no mask, right before or after it. A letter right after a
// backslash is the end of an escape ("\n"), not a word.
func standsAlone(s string, sp span) bool {
	if sp.start > 0 {
		if c := s[sp.start-1]; isTokenByte(c) && (sp.start < 2 || s[sp.start-2] != '\\') || c == ']' && endsWithMask(s[:sp.start]) {
			return false
		}
	}
	return sp.end == len(s) || !isTokenByte(s[sp.end]) && maskAt(s[sp.end:]) == 0
}

func isTokenByte(c byte) bool { return isLetter(rune(c)) || isDigit(rune(c)) || c == '_' }

// masks are what this package writes in place of what it removes.
var masks = []string{redacted, cardMask, emailMask}

// maskAt is the length of the mask s starts with, or 0.
func maskAt(s string) int {
	for _, m := range masks {
		if strings.HasPrefix(s, m) {
			return len(m)
		}
	}
	return 0
}

func endsWithMask(s string) bool {
	for _, m := range masks {
		if strings.HasSuffix(s, m) {
			return true
		}
	}
	return false
}

// fold lowers an ASCII letter; secrets are compared without regard to case,
// since a provider may echo a key in upper case, and masking too much is
// the safe way to be wrong.
func fold(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
