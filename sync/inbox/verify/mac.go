package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

var dot = []byte(".")

// matchAny reports whether any candidate signature equals HMAC-SHA256 of the
// concatenated parts under any key. Parts are written to the MAC one after
// another so the body is never copied into a new message.
func matchAny(keys, candidates [][]byte, parts ...[]byte) bool {
	if len(candidates) == 0 {
		return false
	}
	for _, key := range keys {
		mac := hmac.New(sha256.New, key)
		for _, p := range parts {
			mac.Write(p)
		}
		want := mac.Sum(nil)
		for _, c := range candidates {
			if hmac.Equal(want, c) { // constant time
				return true
			}
		}
	}
	return false
}

// StandardSignature is the webhook-signature entry "v1,<base64>" that
// signs body sent with webhook-id id and webhook-timestamp timestamp, under
// a key from StandardKey: HMAC-SHA256 of "id.timestamp.body". Every sender
// of the scheme signs here (sync/notify, the sandbox's CRM), so what is sent
// and what verifyStandard checks are one reading of the spec.
func StandardSignature(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	for _, p := range [][]byte{[]byte(id), dot, []byte(timestamp), dot, body} {
		mac.Write(p)
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// decodeSig decodes a signature in the given encoding ("hex" or "base64").
func decodeSig(encoding, s string) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if encoding == "hex" {
		b, err = hex.DecodeString(s)
	} else {
		b, err = base64.StdEncoding.DecodeString(s)
	}
	if err != nil {
		// The decoder's message is left out: it quotes the received value.
		return nil, fmt.Errorf("%w: signature is not %s", ErrBadSignature, encoding)
	}
	return b, nil
}

// maxUnix bounds accepted timestamps (about 34,000 years either side of
// 1970) so time arithmetic cannot overflow; no real delivery comes near it.
const maxUnix = 1 << 40

// parseUnix parses a timestamp in unix seconds. Callers keep the raw text for
// the signed message: re-formatting the number could change its bytes.
func parseUnix(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > maxUnix || n < -maxUnix {
		return time.Time{}, fmt.Errorf("%w: timestamp is not unix seconds", ErrBadSignature)
	}
	return time.Unix(n, 0).UTC(), nil
}

// checkFresh refuses a timestamp more than tol before or after now: an old
// one is a replay, and one far ahead would outlive the dedup window.
func checkFresh(ts, now time.Time, tol time.Duration) error {
	age := now.Sub(ts)
	switch {
	case age > tol:
		return fmt.Errorf("%w: signed %s ago, tolerance %s", ErrStaleTimestamp, age.Round(time.Second), tol)
	case age < -tol:
		return fmt.Errorf("%w: signed %s in the future, tolerance %s", ErrStaleTimestamp, (-age).Round(time.Second), tol)
	}
	return nil
}
