package notify

import (
	"net/http"
	"testing"
	"time"
)

// Retry-After is a receiver's to write: whatever it holds, the wait read
// from it is between nothing and a day.
func FuzzRetryAfter(f *testing.F) {
	for _, seed := range []string{"", "7", "-3", "99999999999999999999", "86401", "Wed, 21 Oct 2015 07:28:00 GMT", "soon", " 12 "} {
		f.Add(seed)
	}
	now := time.Date(2015, 10, 21, 7, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := retryAfter(http.Header{"Retry-After": {v}}, now)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("Retry-After %q read as %v", v, d)
		}
	})
}

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"7": 7 * time.Second, "Wed, 21 Oct 2015 07:28:00 GMT": 28 * time.Minute,
		"-3": 0, "soon": 0, "": 0, "999999999": 24 * time.Hour,
	} {
		if got := retryAfter(http.Header{"Retry-After": {v}}, now); got != want {
			t.Errorf("Retry-After %q: got %v, want %v", v, got, want)
		}
	}
}
