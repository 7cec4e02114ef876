package mapping

import (
	"errors"
	"strconv"
	"time"
)

// A mapping must never hang a worker, yet a wall-clock deadline alone
// would fail sound records whenever a busy machine merely delays the
// goroutine (64 renders on 2 CPUs overran 100 ms under -race). So the
// expressions run under a step budget: gojq asks its context's Done before
// every step of its machine, and budget counts those calls. That bound is
// the same on a loaded machine as on an idle one. A generous wall-clock
// limit stays behind it for a single step that works long (sorting a
// million-element array is one step).
const (
	// MaxSteps is how many steps of gojq's machine one Render may take:
	// about 15 ms of work here (150 ms under -race). A field that renames
	// or nests takes under ten steps; reshaping and summing the lines of a
	// 1,000-line order takes about 25,000.
	MaxSteps = 1_000_000
	// Timeout is how long one Render may take, however few its steps.
	Timeout = time.Second
)

// ErrRunaway marks an expression stopped for running too long, most likely
// an endless loop (repeat, range over a huge number).
var ErrRunaway = errors.New("stopped as a runaway (an endless loop?)")

// closed is a channel that is always ready, for a budget that is spent.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// budget is the context.Context a Render evaluates under. gojq calls it
// from the one goroutine that runs the iterator, so it needs no locking.
type budget struct {
	steps int
	start time.Time
	spent string // why it ran out, once it has
}

func newBudget() *budget { return &budget{start: time.Now()} }

// Deadline reports none: the budget is not only a time.
func (b *budget) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done counts a step and is ready once the budget is spent.
func (b *budget) Done() <-chan struct{} {
	if b.spent != "" {
		return closed
	}
	b.steps++
	switch {
	case b.steps > MaxSteps:
		b.spent = "more than " + strconv.Itoa(MaxSteps) + " steps"
	case b.steps%1024 == 0 && time.Since(b.start) > Timeout:
		b.spent = "longer than " + Timeout.String()
	default:
		return nil // never ready: gojq's select takes its default
	}
	return closed
}

// Err says why the budget ran out, once it has.
func (b *budget) Err() error {
	if b.spent == "" {
		return nil
	}
	return ErrRunaway
}

// Value holds nothing.
func (b *budget) Value(any) any { return nil }
