package redact

import "strings"

// Card numbers are 13 to 19 digits, written together or in groups joined by
// single spaces or dashes, and pass the Luhn check. Payment cards start with
// 2 to 6 (Mastercard, Amex, Visa, Discover, JCB, UnionPay…); requiring that
// keeps millisecond timestamps and other ids starting with 1 readable.
const (
	cardMinDigits = 13
	cardMaxDigits = 19
)

// maskCards replaces card numbers in s with "[card]". It walks the digit
// groups of s and, from each group in turn, masks the longest card number
// that starts there, so "1 4242 4242 4242 4242" still loses its card.
func maskCards(s string) string {
	groups := digitGroup.FindAllStringIndex(s, -1)
	var b strings.Builder
	last := 0
	for i := 0; i < len(groups); i++ {
		j := cardEnd(s, groups, i)
		if j < 0 {
			continue
		}
		b.WriteString(s[last:groups[i][0]])
		b.WriteString(cardMask)
		last, i = groups[j][1], j
	}
	b.WriteString(s[last:])
	return b.String()
}

// cardEnd returns the index of the last group of the longest card number
// that starts with groups[i], or -1. A card never starts or ends inside a
// word: "abc4242…" is an id, not a card.
func cardEnd(s string, groups [][]int, i int) int {
	start := groups[i][0]
	if start > 0 && isWordByte(s[start-1]) || s[start] < '2' || s[start] > '6' {
		return -1
	}
	best, digits := -1, 0
	for j := i; j < len(groups); j++ {
		if j > i && !joined(s, groups[j-1], groups[j]) {
			break
		}
		digits += groups[j][1] - groups[j][0]
		if digits > cardMaxDigits {
			break
		}
		end := groups[j][1]
		if digits >= cardMinDigits && (end == len(s) || !isWordByte(s[end])) && luhn(s[start:end]) {
			best = j
		}
	}
	return best
}

// joined reports whether two digit groups are separated by one space or dash.
func joined(s string, a, b []int) bool {
	return b[0] == a[1]+1 && (s[a[1]] == ' ' || s[a[1]] == '-')
}

func isWordByte(c byte) bool { return isLetter(rune(c)) || c == '_' }

// cardLike reports whether a JSON or slog number literal is a card number.
func cardLike(n string) bool {
	return len(n) >= cardMinDigits && len(n) <= cardMaxDigits && onlyDigits(n) &&
		n[0] >= '2' && n[0] <= '6' && luhn(n)
}

// luhn checks the Luhn digit of the digits in s, ignoring separators.
func luhn(s string) bool {
	sum, double := 0, false
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}
