package models_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
)

// A payload is one JSON object, with white space after it at most: a
// stray } or ] after the object is refused, not dropped.
func TestAPayloadIsOneObjectWithNothingAfterIt(t *testing.T) {
	for _, raw := range []string{`{"a":1}`, "{\"a\":1}\n", " {\"a\":1} \t\r\n"} {
		got, _, err := models.CanonicalPayload([]byte(raw))
		require.NoError(t, err, "%q", raw)
		require.Equal(t, `{"a":1}`, got)
	}
	for _, raw := range []string{`{"a":1}}`, `{"a":1}]`, `{"a":1} {"b":2}`, `{"a":1} x`} {
		_, _, err := models.CanonicalPayload([]byte(raw))
		require.ErrorContains(t, err, "one JSON object, with nothing after it", "%q", raw)
	}
}
