package inbox

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// An overlong id is stored as its head and its hash: the same id always
// the same way, two ids with one head apart, never in a form an id sent as
// is could have, and never cut inside a character.
func TestOverlongIDsAreStoredAsHeadAndHash(t *testing.T) {
	require.Equal(t, strings.Repeat("a", maxStoredID), storedForm(strings.Repeat("a", maxStoredID)), "at the limit: as sent")
	long := strings.Repeat("a", 5000)
	require.Equal(t, storedForm(long), storedForm(strings.Clone(long)))
	require.NotEqual(t, storedForm(long), storedForm(long[:4999]+"b"), "ids alike but for their last byte")
	require.Contains(t, storedForm(long), hashMark)
	for _, char := range []string{"é", "€", "𝄞"} { // two, three and four bytes
		for shift := range 4 {
			s := strings.Repeat("x", shift) + strings.Repeat(char, 200)
			checkStoredForm(t, s)
		}
	}
}

func FuzzStoredForm(f *testing.F) {
	f.Add(strings.Repeat("€", 100))
	f.Add("evt_1")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("storedForm is given valid UTF-8 only (storable refuses the rest)")
		}
		checkStoredForm(t, s)
		checkStoredForm(t, s+strings.Repeat(s+"~", maxStoredID)) // and a long one from it
	})
}

// checkStoredForm checks what storedForm promises for s.
func checkStoredForm(t *testing.T, s string) {
	t.Helper()
	got := storedForm(s)
	if len(s) <= maxStoredID {
		require.Equal(t, s, got)
		return
	}
	require.Greater(t, len(got), maxStoredID, "longer than any id stored as sent")
	require.LessOrEqual(t, len(got), maxStoredID+utf8.UTFMax)
	require.True(t, utf8.ValidString(got), "cut between characters: %q", got)
	head, _, ok := strings.Cut(got, hashMark)
	require.True(t, ok)
	require.True(t, strings.HasPrefix(s, head), "the head is the id's")
}
