package views

import (
	"testing"
	"time"
)

func TestCountGroupsThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345",
		999999: "999,999", 1000000: "1,000,000", 283412907: "283,412,907", -4500: "-4,500"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestAgoAndClock(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{3 * time.Second: "in a few seconds", -3 * time.Second: "just now",
		-14 * time.Second: "14 s ago", 5 * time.Minute: "in 5 min"} {
		if got := Ago(now.Add(d), now); got != want {
			t.Errorf("Ago(now%+v) = %q, want %q", d, got, want)
		}
	}
	for at, want := range map[time.Time]string{
		time.Date(2026, 11, 29, 3, 51, 17, 0, time.UTC): "03:51:17",
		time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC): "28 Nov 23:59",
		time.Date(2025, 11, 29, 3, 51, 0, 0, time.UTC):  "29 Nov 2025 03:51",
	} {
		if got := Clock(at, now); got != want {
			t.Errorf("Clock(%v) = %q, want %q", at, got, want)
		}
	}
	if Recent(now.Add(-2*time.Hour), now) || !Recent(now.Add(-59*time.Minute), now) || !Recent(now.Add(time.Hour), now) {
		t.Error("Recent should hold for the last hour and the future only")
	}
}
