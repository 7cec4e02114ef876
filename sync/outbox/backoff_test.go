package outbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Backoff is a pure function of (attempt, base, max, jitter): the ceiling
// doubles per retry from base up to max, and the jitter picks a point below it.
func TestBackoffBounds(t *testing.T) {
	const s, m = time.Second, time.Minute
	for _, tc := range []struct {
		attempt   int
		base, max time.Duration
		rnd       float64
		want      time.Duration
	}{
		{attempt: 1, base: 2 * s, max: 15 * m, rnd: 0.5, want: 1 * s},                     // ceiling 2 s
		{attempt: 2, base: 2 * s, max: 15 * m, rnd: 0.5, want: 2 * s},                     // 4 s
		{attempt: 3, base: 2 * s, max: 15 * m, rnd: 0.5, want: 4 * s},                     // 8 s
		{attempt: 10, base: 2 * s, max: 15 * m, rnd: 0.5, want: 450 * s},                  // 1024 s capped at 900 s
		{attempt: 1000, base: 2 * s, max: 15 * m, rnd: 0.5, want: 450 * s},                // no overflow past the cap
		{attempt: 0, base: 2 * s, max: 15 * m, rnd: 0.5, want: 1 * s},                     // read as the first retry
		{attempt: -3, base: 2 * s, max: 15 * m, rnd: 0.5, want: 1 * s},                    // likewise
		{attempt: 1, base: 2 * s, max: 15 * m, rnd: 0, want: 0},                           // full jitter reaches zero
		{attempt: 3, base: 2 * s, max: 15 * m, rnd: 0.999, want: 7992 * time.Millisecond}, // and stays below the ceiling
		{attempt: 1, base: 30 * s, max: 10 * s, rnd: 0.5, want: 5 * s},                    // a base over max is capped too
		{attempt: 4, base: 0, max: 15 * m, rnd: 0.5, want: 0},                             // no base, no wait
	} {
		t.Run(fmt.Sprintf("attempt %d base %v max %v rnd %v", tc.attempt, tc.base, tc.max, tc.rnd), func(t *testing.T) {
			got := Backoff(tc.attempt, tc.base, tc.max, func() float64 { return tc.rnd })
			require.Equal(t, tc.want, got)
		})
	}
}
