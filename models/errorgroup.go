package models

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// Things that differ between failures that are the same problem.
	groupQuoted = regexp.MustCompile(`"[^"]{0,200}"`)
	groupIDs    = regexp.MustCompile(`\b[A-Za-z]+[_-][A-Za-z0-9_-]*\d[A-Za-z0-9_-]*\b`) // deal_123, site_order_42, pay_9f3
	groupHex    = regexp.MustCompile(`\b[0-9a-fA-F]{8,}(-[0-9a-fA-F]{4,})*\b`)
	groupNums   = regexp.MustCompile(`\d+(\.\d+)?`)
	groupSpaces = regexp.MustCompile(`\s+`)
	groupStatus = regexp.MustCompile(`^HTTP \d{3}: `) // already in the group's code column
)

// ErrorGroup is a failure's fingerprint: the service, the HTTP code (none
// when no answer came: the message says why, be it a timeout, a link never
// sent, or a person) and the message with ids, quoted values and numbers
// stripped, so that a thousand "deal 123 not found" are one group a person
// can act on once.
func ErrorGroup(service string, httpCode int, message string) string {
	m := groupQuoted.ReplaceAllString(groupStatus.ReplaceAllString(message, ""), `"…"`)
	m = groupIDs.ReplaceAllString(m, "ID")
	m = groupHex.ReplaceAllString(m, "ID")
	m = groupNums.ReplaceAllString(m, "N")
	m = strings.TrimSpace(groupSpaces.ReplaceAllString(m, " "))
	if len(m) > 160 {
		m = m[:160] + "…"
	}
	if httpCode == 0 {
		return service + " · " + m
	}
	return fmt.Sprintf("%s · HTTP %d · %s", service, httpCode, m)
}
