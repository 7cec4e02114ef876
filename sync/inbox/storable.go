package inbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// What a delivery may hold that a database cannot store. A Postgres text
// column holds neither a NUL character nor invalid UTF-8, and a btree index
// entry holds about 2.7 KB: an event breaking either was refused mid-
// transaction, answered 5xx, and re-sent by its provider for days, while
// SQLite took it. The inbox decides instead, the same way on both.
const (
	// maxStoredID is the longest event id or type stored as sent; a longer
	// one is stored under storedForm.
	maxStoredID = 255
	// maxObjectID is the longest id or key of an event's object that an
	// effect looks up or stores: with the service and type beside it, it
	// fits every index it goes in.
	maxObjectID = 1024
)

// hashMark joins the kept head of an overlong id to the SHA-256 of all of it.
const hashMark = "...sha256:"

// storedForm is the form an event id or type is stored and deduplicated
// under: itself when it is at most maxStoredID bytes, else its first bytes
// (cut between characters), hashMark and its SHA-256 in hex. That form is
// always longer than maxStoredID, so it can never be an id stored as sent.
// s is valid UTF-8.
func storedForm(s string) string {
	if len(s) <= maxStoredID {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	tail := hashMark + hex.EncodeToString(sum[:])
	n := maxStoredID + 1 - len(tail) + utf8.UTFMax - 1 // backing off to a character start keeps it over maxStoredID
	for !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + tail
}

// textProblem says why s cannot be stored as text, or "" when it can.
func textProblem(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	return ""
}

// storable refuses an event whose id or type no database can hold, saying
// which and why, and puts both in their stored form.
func (e *Event) storable() error {
	if p := textProblem(e.ID); p != "" {
		return fmt.Errorf("the event id %s", p)
	}
	if p := textProblem(e.Type); p != "" {
		return fmt.Errorf("the event type %s", p)
	}
	e.ID, e.Type = storedForm(e.ID), storedForm(e.Type)
	return nil
}

// storableText makes a redacted body fit a text column: invalid UTF-8 and
// NUL bytes become U+FFFD. A JSON document holds NUL only escaped, and its
// strings decode to U+FFFD where they held invalid UTF-8 anyway, so a
// replay reads what the first delivery read; a raw NUL comes only in junk
// after the document, which no effect reads.
func storableText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
