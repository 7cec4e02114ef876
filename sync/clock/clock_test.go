package clock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An anchored clock tells the reference's time however far the local clock
// is off, moves as the local clock moves, and follows the reference again
// at each measurement.
func TestAnchoredKeepsToTheReference(t *testing.T) {
	t.Parallel()
	ref := NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	for _, off := range []time.Duration{0, 10 * time.Minute, -10 * time.Minute, 36 * time.Hour} {
		local := Offset{Clock: ref, By: off}
		a, err := Anchor(context.Background(), local, func(context.Context) (time.Time, error) { return ref.Now(), nil })
		require.NoError(t, err)
		require.Equal(t, ref.Now(), a.Now(), "local clock off by %v", off)
		require.Equal(t, -off, a.Offset())
		ref.Advance(time.Minute)
		require.Equal(t, ref.Now(), a.Now(), "moves with the local clock")
	}

	local := NewFake(ref.Now())
	a, err := Anchor(context.Background(), local, func(context.Context) (time.Time, error) { return ref.Now(), nil })
	require.NoError(t, err)
	local.Advance(5 * time.Minute) // the machine's clock is stepped
	require.Equal(t, ref.Now().Add(5*time.Minute), a.Now(), "off until measured again")
	got, err := a.Measure(context.Background())
	require.NoError(t, err)
	require.Equal(t, -5*time.Minute, got)
	require.Equal(t, ref.Now(), a.Now())

	broken := errors.New("database gone")
	_, err = Anchor(context.Background(), local, func(context.Context) (time.Time, error) { return time.Time{}, broken })
	require.ErrorIs(t, err, broken, "no clock without a reading")
	_, err = (&Anchored{local: local, read: func(context.Context) (time.Time, error) { return time.Time{}, broken }}).Measure(context.Background())
	require.ErrorIs(t, err, broken)
}

// Each reading is placed at the middle of its round trip, and the reading
// with the shortest trip wins: the longer ones here were answered late in
// their trip, which would put the reference ahead by more than it is.
func TestAnchoredTrustsTheShortestRoundTrip(t *testing.T) {
	t.Parallel()
	local := NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	trips := []struct{ before, after time.Duration }{
		{350 * time.Millisecond, 50 * time.Millisecond},
		{50 * time.Millisecond, 50 * time.Millisecond},
		{250 * time.Millisecond, 50 * time.Millisecond},
	}
	i := 0
	read := func(context.Context) (time.Time, error) {
		trip := trips[i%len(trips)]
		i++
		local.Advance(trip.before)
		at := local.Now().Add(time.Hour) // the reference is an hour ahead
		local.Advance(trip.after)
		return at, nil
	}
	a, err := Anchor(context.Background(), local, read)
	require.NoError(t, err)
	require.Equal(t, time.Hour, a.Offset())
}
