package salesforce

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// Record ids look like Salesforce's: a three-character key prefix naming the
// object, a pod, a reserved character and a nine-character serial make the
// 15-character case-sensitive id; three more characters encode the case of
// the first fifteen, so that the 18-character id survives case-insensitive
// systems. Example from the docs, an Account: 001D000000IRFmaIAH
// (https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm).

// standardPrefixes are the key prefixes of the standard objects tests use.
var standardPrefixes = map[string]string{
	"Account":     "001",
	"Contact":     "003",
	"Opportunity": "006",
	"Lead":        "00Q",
	"Case":        "500",
}

const (
	base62       = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	suffixAlpha  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
	idPod        = "Fk" // where the record "lives"; any two characters
	serialDigits = 9
)

// recordID is the 18-character id of the n-th record of the object whose
// key prefix is prefix.
func recordID(prefix string, n uint64) string {
	serial := make([]byte, serialDigits)
	for i := serialDigits - 1; i >= 0; i-- {
		serial[i] = base62[n%62]
		n /= 62
	}
	id15 := prefix + idPod + "0" + string(serial)
	return id15 + caseSuffix(id15)
}

// caseSuffix encodes which of the 15 characters are upper case, five at a
// time, as Salesforce's 18-character ids do.
func caseSuffix(id15 string) string {
	var b strings.Builder
	for chunk := 0; chunk < 3; chunk++ {
		flags := 0
		for i := 0; i < 5; i++ {
			if c := id15[chunk*5+i]; c >= 'A' && c <= 'Z' {
				flags |= 1 << i
			}
		}
		b.WriteByte(suffixAlpha[flags])
	}
	return b.String()
}

// randomID is a fresh 18-character id with prefix, for what is not a record
// (query locators "01g…", orgs "00D…", users "005…").
func randomID(prefix string) string {
	buf := make([]byte, 12)
	_, _ = rand.Read(buf) // crypto/rand never fails on supported platforms
	var b strings.Builder
	b.WriteString(prefix)
	for _, c := range buf {
		b.WriteByte(base62[int(c)%62])
	}
	id15 := b.String()
	return id15 + caseSuffix(id15)
}

// keyPrefix is the prefix of obj: its own, a standard object's, or the next
// custom one (a00, a01, …) for a custom object (Name__c).
func keyPrefix(obj Object, customSeen int) (string, error) {
	switch {
	case obj.KeyPrefix != "":
		if len(obj.KeyPrefix) != 3 {
			return "", fmt.Errorf("object %s: key prefix %q is not three characters", obj.Name, obj.KeyPrefix)
		}
		return obj.KeyPrefix, nil
	case standardPrefixes[obj.Name] != "":
		return standardPrefixes[obj.Name], nil
	case strings.HasSuffix(obj.Name, "__c"):
		return fmt.Sprintf("a0%c", base62[customSeen%62]), nil
	}
	return "", fmt.Errorf("object %s: give it a key prefix (not a standard object the fake knows, nor custom __c)", obj.Name)
}
