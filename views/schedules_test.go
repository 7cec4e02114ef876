package views

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTookLabel(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0\u00a0ms"},
		{-time.Millisecond, "0\u00a0ms"}, // clocks of two instances disagree
		{12*time.Millisecond + 400*time.Microsecond, "12\u00a0ms"},
		{999 * time.Millisecond, "999\u00a0ms"},
		{time.Second, "1\u00a0s"},
		{3440 * time.Millisecond, "3.4\u00a0s"},
		{59*time.Second + 960*time.Millisecond, "1\u00a0min 0\u00a0s"}, // not "60 s"
		{time.Minute, "1\u00a0min 0\u00a0s"},
		{2*time.Minute + 5400*time.Millisecond, "2\u00a0min 5\u00a0s"},
		{90 * time.Minute, "90\u00a0min 0\u00a0s"},
	} {
		require.Equal(t, c.want, tookLabel(c.d), "%v", c.d)
	}
}

func TestThisInstanceMarksOnlyTheOneServing(t *testing.T) {
	require.Equal(t, " (this\u00a0instance)", thisInstance("web-1", "web-1"))
	require.Empty(t, thisInstance("worker-2", "web-1"))
	require.Empty(t, thisInstance("", ""), "an unnamed run is not this instance's")
}
