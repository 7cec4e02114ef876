// Package clock gives the engine and the web layer a time source that tests
// can replace.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// Real is the wall clock, in UTC.
type Real struct{}

// Now returns the current UTC time.
func (Real) Now() time.Time { return time.Now().UTC() }

// Fake is a clock that moves only when told to. Safe for concurrent use.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t.UTC()} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the fake time forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// Sleep waits for d of real time unless ctx ends first, and reports whether
// it waited the whole d.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Offset is a clock that runs a fixed duration off another: tests use it to
// play a machine whose clock is wrong.
type Offset struct {
	Clock Clock
	By    time.Duration
}

// Now returns the other clock's time, off by By.
func (o Offset) Now() time.Time { return o.Clock.Now().Add(o.By) }

// Anchored tells a reference clock's time — the database's, which every
// instance shares — as a local clock's time plus the offset last measured
// between the two. Leases are compared across instances: taken from each
// machine's own clock, one that runs ahead by more than a lease would see
// every live lease as expired, and one that runs behind would take leases
// that look expired to the others. Safe for concurrent use.
type Anchored struct {
	local Clock
	read  func(context.Context) (time.Time, error)

	mu     sync.Mutex
	offset time.Duration
}

// anchorSamples is how many readings a measurement takes; the one with the
// shortest round trip wins, as the one its network delay blurred least.
const anchorSamples = 3

// Anchor measures the offset between local and the reference clock that
// read tells, and returns the clock that keeps to the reference.
func Anchor(ctx context.Context, local Clock, read func(context.Context) (time.Time, error)) (*Anchored, error) {
	a := &Anchored{local: local, read: read}
	if _, err := a.Measure(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// Now returns the reference clock's time.
func (a *Anchored) Now() time.Time { return a.local.Now().Add(a.Offset()) }

// Offset is how far the reference clock is ahead of the local one (behind,
// when negative), as last measured.
func (a *Anchored) Offset() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.offset
}

// Measure reads the reference clock again, keeps the new offset and returns
// it. A reading is taken as the reference's time at the middle of its round
// trip, so the offset is off by at most half the shortest round trip.
func (a *Anchored) Measure(ctx context.Context) (time.Duration, error) {
	best, bestTrip := time.Duration(0), time.Duration(-1)
	for range anchorSamples {
		sent := a.local.Now()
		ref, err := a.read(ctx)
		if err != nil {
			return 0, err
		}
		trip := a.local.Now().Sub(sent)
		if bestTrip < 0 || trip < bestTrip {
			best, bestTrip = ref.Sub(sent.Add(trip/2)), trip
		}
	}
	a.mu.Lock()
	a.offset = best
	a.mu.Unlock()
	return best, nil
}
