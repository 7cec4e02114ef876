package redact

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode/utf8"
)

var (
	// keyPrefix finds the `key=`, `key: ` or `"key":` of a pair, also with
	// JSON escaped once (`\"key\":`) as in a body quoted in a log line, and
	// the last key of a form field in bracket notation (`metadata[key]=`,
	// as Stripe's form bodies carry nested fields). A key is up to three
	// words so that "API Key: …" is seen whole.
	keyPrefix = regexp.MustCompile(`(?i)\\?"?\b([a-z][a-z0-9_.\-]*(?: [a-z][a-z0-9_.\-]*){0,2})\\?"?\]?\s*[:=]\s*`)

	// pairValue is the value after a keyPrefix: a quoted string (closed or cut
	// off at the end of the text), a credential with its scheme ("Bearer
	// abc"), or a bare word. It is matched separately, and only after a
	// sensitive key, so that a long run of innocent pairs costs linear time.
	pairValue = regexp.MustCompile(`(?i)^(?:` +
		`\\"(?:[^"\\]|\\[^"])*(?:\\"|\\?$)|` +
		`"(?:[^"\\]|\\.)*(?:"|\\?$)|` +
		`'[^']*(?:'|$)|` +
		`(?:bearer|basic|digest|token|bot)\s+[^\s,;&"'<>{}]+|` +
		`[^\s,;&"'<>{}]+)`)

	// authScheme finds an Authorization credential in prose or a dumped request.
	authScheme = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)([A-Za-z0-9\-._~+/]+=*)`)

	// userinfo finds the "user:password@" of a URL. Brackets are not allowed
	// in it, so a mask written by a later rule cannot complete a match.
	userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@\[\]"'<>{}]+:[^/\s@\[\]"'<>{}]+@`)

	email = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)

	digitGroup = regexp.MustCompile(`[0-9]+`)

	// tokenRun is a run of base64/base64url characters with its padding.
	tokenRun = regexp.MustCompile(`[A-Za-z0-9_\-+/]+=*`)

	canonicalUUID = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)
)

// minSecret is the shortest run of token characters taken for a secret.
const minSecret = 24

// Text masks secrets in free text: values of sensitive `key=value`,
// `key: value` and `"key":"value"` pairs, Bearer and Basic credentials (the
// scheme word stays), passwords in URLs, e-mail addresses, Luhn-valid card
// numbers, and long runs of token characters that mix letters and digits
// (API keys, webhook secrets, JWTs). Canonical UUIDs, timestamps, short
// numbers and URL paths stay readable. Card numbers become "[card]",
// addresses "[email]", everything else "[redacted]". Phone numbers in prose
// are not recognised; they are caught only under a sensitive key.
//
// Known secret values go first (see AddSecrets and ForPayload), whole,
// before a pattern takes part of one. Pairs go next so that a masked value
// keeps its key beside it; long runs go last so that the more specific
// masks win. Text(Text(s)) == Text(s).
//
// Each pattern runs only when s holds what any match of it needs (a ":" or
// "=", an "@", thirteen digits, …): most strings in a body hold none, and
// skipping the regular expressions for them is most of Text's speed.
func (r *Redactor) Text(s string) string {
	s = r.maskKnown(s)
	if mayHoldPair(s) {
		s = rewrite(keyPrefix, s, r.maskPair)
	}
	hasAt := strings.IndexByte(s, '@') >= 0
	if hasAt && strings.Contains(s, "://") {
		s = userinfo.ReplaceAllString(s, "${1}"+redacted+"@")
	}
	if mayHoldScheme(s) {
		s = rewrite(authScheme, s, maskCredential)
	}
	if hasAt {
		s = email.ReplaceAllString(s, emailMask)
	}
	if countDigits(s) >= cardMinDigits {
		s = maskCards(s)
	}
	if longestTokenRun(s) >= minSecret {
		s = tokenRun.ReplaceAllStringFunc(s, r.maskRun)
	}
	return s
}

// mayHoldPair reports whether keyPrefix could match s: a ":" or "=" follows
// a word with a letter in it (then maybe a quote, maybe escaped, and
// spaces), or s has a byte beyond ASCII, where case folding may make
// letters of others ("K" is a letter to (?i)[a-z]). "01:27:15" is no pair.
func mayHoldPair(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return true
		case c == ':' || c == '=':
			j := i
			for j > 0 && strings.IndexByte(" \t\n\f\r", s[j-1]) >= 0 {
				j--
			}
			if j > 0 && s[j-1] == '"' {
				j--
			}
			if j > 0 && s[j-1] == '\\' {
				j--
			}
			for ; j > 0 && isKeyByte(s[j-1]); j-- {
				if isLetter(rune(s[j-1])) {
					return true
				}
			}
		}
	}
	return false
}

// isKeyByte reports whether c may be part of a key word of keyPrefix.
func isKeyByte(c byte) bool {
	return isLetter(rune(c)) || isDigit(rune(c)) || c == '_' || c == '.' || c == '-'
}

// mayHoldScheme reports whether authScheme could match s: it holds "bearer"
// or "basic" in any case, or a byte beyond ASCII, where case folding may
// turn other letters into these ("ſ" folds to "s").
func mayHoldScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return true
		case c == 'b' || c == 'B':
			rest := s[i:]
			if len(rest) >= 5 && strings.EqualFold(rest[:5], "basic") || len(rest) >= 6 && strings.EqualFold(rest[:6], "bearer") {
				return true
			}
		}
	}
	return false
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigit(rune(s[i])) {
			n++
		}
	}
	return n
}

// longestTokenRun is the length of the longest run of the characters of
// tokenRun, its padding included: no shorter run is masked.
func longestTokenRun(s string) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if c := rune(s[i]); isLetter(c) || isDigit(c) || strings.ContainsRune("_-+/=", c) {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// rewrite replaces each match of re in s, left to right. fn gets the
// submatch indexes of a match and returns its replacement together with the
// offset where scanning resumes, which may lie inside the match: after a
// rejected "Bearer Bearer", the second "Bearer abc123…" must still be seen.
func rewrite(re *regexp.Regexp, s string, fn func(s string, loc []int) (string, int)) string {
	var b strings.Builder
	pos := 0
	for pos < len(s) {
		loc := re.FindStringSubmatchIndex(s[pos:])
		if loc == nil {
			break
		}
		for i := range loc {
			if loc[i] >= 0 {
				loc[i] += pos
			}
		}
		repl, next := fn(s, loc)
		b.WriteString(s[pos:loc[0]])
		b.WriteString(repl)
		pos = next
	}
	b.WriteString(s[pos:])
	return b.String()
}

// maskPair masks the value after a keyPrefix match whose key is sensitive.
// Scanning resumes after the separator when the key is innocent, since its
// value may hold a pair of its own.
func (r *Redactor) maskPair(s string, loc []int) (string, int) {
	prefix := s[loc[0]:loc[1]]
	if !r.Sensitive(s[loc[2]:loc[3]]) {
		return prefix, loc[1]
	}
	value := pairValue.FindString(s[loc[1]:])
	if value == "" {
		return prefix, loc[1]
	}
	return prefix + maskValue(value), loc[1] + len(value)
}

// maskValue replaces a value but keeps its quotes, so JSON-like text keeps its shape.
func maskValue(v string) string {
	for _, q := range []string{`\"`, `"`, `'`} {
		if strings.HasPrefix(v, q) {
			if len(v) >= 2*len(q) && strings.HasSuffix(v, q) {
				return q + redacted + q
			}
			return q + redacted
		}
	}
	return redacted
}

// maskCredential masks the credential after "Bearer" or "Basic". Prose uses
// both words too ("invalid bearer token", "Basic plan"), so a Bearer value
// must look like a credential (eight characters, or anything but letters)
// and a Basic value must decode to "user:password" as RFC 7617 says.
func maskCredential(s string, loc []int) (string, int) {
	scheme, space, cred := s[loc[2]:loc[3]], s[loc[4]:loc[5]], s[loc[6]:loc[7]]
	if strings.EqualFold(scheme, "basic") && !isBasicCredential(cred) ||
		strings.EqualFold(scheme, "bearer") && len(cred) < 8 && onlyLetters(cred) {
		return scheme + space, loc[5]
	}
	return scheme + space + redacted, loc[1]
}

func isBasicCredential(cred string) bool {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(cred)
	}
	return err == nil && strings.Contains(string(raw), ":")
}

// maskRun masks a run of token characters that looks like a secret. A run
// with a slash may be a URL path ("/deals/123/notes"): then only the path
// segments that look like secrets go. A path is recognised by a leading or
// trailing slash or a lower-case word among its segments; base64 rarely has
// either. The slash-ends rule also keeps the pieces left around a masked
// segment paths on a second pass.
func maskRun(run string) string {
	if !strings.Contains(run, "/") || !pathLike(run) {
		if secretLooking(run) {
			return redacted
		}
		return run
	}
	segs := strings.Split(run, "/")
	for i, seg := range segs {
		if secretLooking(seg) {
			segs[i] = redacted
		}
	}
	return strings.Join(segs, "/")
}

func pathLike(run string) bool {
	trimmed := strings.TrimRight(run, "=")
	if strings.HasPrefix(trimmed, "/") || strings.HasSuffix(trimmed, "/") {
		return true
	}
	for _, seg := range strings.Split(trimmed, "/") {
		if len(seg) >= 3 && onlyLetters(seg) && strings.ToLower(seg) == seg {
			return true
		}
	}
	return false
}

// secretLooking reports whether a run of token characters is long, mixes
// letters and digits, and is neither a canonical UUID (ids are needed for
// support) nor words and numbers glued by separators ("deal-42-create-v2").
func secretLooking(run string) bool {
	if len(run) < minSecret || canonicalUUID.MatchString(run) {
		return false
	}
	hasLetter, hasDigit := false, false
	for _, c := range run {
		hasLetter = hasLetter || isLetter(c)
		hasDigit = hasDigit || isDigit(c)
	}
	return hasLetter && hasDigit && !gluedWords(run)
}

// gluedWords reports whether every piece of run between separators is a word,
// a number, or at most three characters ("v2", "q1").
func gluedWords(run string) bool {
	pieces := strings.FieldsFunc(run, func(c rune) bool { return !isLetter(c) && !isDigit(c) })
	for _, p := range pieces {
		if len(p) > 3 && !onlyLetters(p) && !onlyDigits(p) {
			return false
		}
	}
	return true
}

func isLetter(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c rune) bool  { return c >= '0' && c <= '9' }

func onlyLetters(s string) bool {
	return strings.IndexFunc(s, func(c rune) bool { return !isLetter(c) }) < 0
}
func onlyDigits(s string) bool {
	return strings.IndexFunc(s, func(c rune) bool { return !isDigit(c) }) < 0
}
