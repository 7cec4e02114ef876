// Package logdedup keeps a repeated failure from flooding the process log.
// A warning or an error written once is, for an interval, counted instead of
// written again; when the interval ends, the count is written as one line
// ("claim failed (repeated 57 times in the last 10s)"). During an outage
// every request and every tick of the engine meets the same failure: the log
// says so once per interval, and a different failure is still written at
// once. Info and debug lines pass untouched.
package logdedup

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultInterval is how long a failure is counted before its count is written.
const DefaultInterval = 10 * time.Second

// Options configure a Handler.
type Options struct {
	// Interval is how long a failure, once written, is counted instead of
	// written again; zero means DefaultInterval.
	Interval time.Duration
	// Vary names attributes that differ from one occurrence of a failure to
	// the next — a request id, a duration — and so do not make it another
	// failure. Every other attribute, the level and the message do.
	Vary []string
	// Now tells the time; nil means time.Now.
	Now func() time.Time
}

// Handler is a slog.Handler that writes a repeated warning or error once per
// interval, with a count, to the handler it wraps.
type Handler struct {
	inner slog.Handler
	// scope is what WithGroup and WithAttrs added, as text: part of the
	// identity of every record this handler sees.
	scope string
	c     *counter
}

// New wraps inner.
func New(inner slog.Handler, o Options) *Handler {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	vary := map[string]bool{}
	for _, k := range o.Vary {
		vary[k] = true
	}
	return &Handler{inner: inner, c: &counter{interval: o.Interval, vary: vary, now: o.Now, windows: map[string]*window{}}}
}

// Enabled defers to the wrapped handler.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle writes rec, or counts it when the same failure was written within
// the interval.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level < slog.LevelWarn {
		return h.inner.Handle(ctx, rec)
	}
	due, write := h.c.observe(h.key(rec), rec, h.inner)
	if due != nil {
		due.write(ctx)
	}
	if !write {
		return nil
	}
	return h.inner.Handle(ctx, rec)
}

// WithAttrs returns a handler whose attributes are part of every identity.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.scope)
	h.c.writeAttrs(&b, as)
	return &Handler{inner: h.inner.WithAttrs(as), scope: b.String(), c: h.c}
}

// WithGroup returns a handler whose group is part of every identity.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &Handler{inner: h.inner.WithGroup(name), scope: h.scope + name + "{", c: h.c}
}

// Flush writes the count of every failure counted and not yet written, at
// once: at a stop, so that the last interval's counts are not lost.
func (h *Handler) Flush() {
	for _, s := range h.c.takeDue(true) {
		s.write(context.Background())
	}
}

// key is the identity of a failure: level, scope, message and the
// attributes that do not vary.
func (h *Handler) key(rec slog.Record) string {
	var b strings.Builder
	b.WriteString(rec.Level.String())
	b.WriteByte(0)
	b.WriteString(h.scope)
	b.WriteByte(0)
	b.WriteString(rec.Message)
	b.WriteByte(0)
	rec.Attrs(func(a slog.Attr) bool {
		h.c.writeAttr(&b, a)
		return true
	})
	return b.String()
}

// counter is the state every handler derived from one New shares.
type counter struct {
	interval time.Duration
	vary     map[string]bool
	now      func() time.Time

	mu        sync.Mutex
	windows   map[string]*window
	lastSweep time.Time
}

// window is one failure's current interval.
type window struct {
	start   time.Time    // when the failure, or its count, was last written
	repeats int          // occurrences since, not written
	last    slog.Record  // the latest of them: the count line carries its attributes
	inner   slog.Handler // where the failure was written
	timer   *time.Timer  // writes the count when the interval ends
}

// summary is a count line ready to be written.
type summary struct {
	inner slog.Handler
	rec   slog.Record
}

func (s *summary) write(ctx context.Context) { _ = s.inner.Handle(ctx, s.rec) }

// observe decides whether rec is written and returns a count line that is
// due before it, if any.
func (c *counter) observe(key string, rec slog.Record, inner slog.Handler) (due *summary, write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.sweep(now)
	w := c.windows[key]
	if w == nil || w.repeats == 0 && now.Sub(w.start) >= c.interval {
		c.windows[key] = &window{start: now, inner: inner}
		return nil, true
	}
	if w.repeats > 0 && now.Sub(w.start) >= c.interval {
		// The interval ended before its timer ran: write the count first.
		due = w.take(now)
	}
	w.repeats++
	w.last = rec.Clone()
	if w.timer == nil {
		w.timer = time.AfterFunc(w.start.Add(c.interval).Sub(now), c.writeDue)
	}
	return due, false
}

// writeDue writes the counts whose interval has ended; the timers call it.
func (c *counter) writeDue() {
	for _, s := range c.takeDue(false) {
		s.write(context.Background())
	}
}

// takeDue takes the count lines whose interval has ended, or every pending
// one when all is set.
func (c *counter) takeDue(all bool) []*summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var out []*summary
	for _, w := range c.windows {
		if w.repeats > 0 && (all || now.Sub(w.start) >= c.interval) {
			out = append(out, w.take(now))
		}
	}
	return out
}

// take returns the window's count line and starts its next interval.
func (w *window) take(now time.Time) *summary {
	times := "times"
	if w.repeats == 1 {
		times = "time"
	}
	msg := fmt.Sprintf("%s (repeated %d %s in the last %s)", w.last.Message, w.repeats, times, span(now.Sub(w.start)))
	rec := slog.NewRecord(now, w.last.Level, msg, w.last.PC)
	w.last.Attrs(func(a slog.Attr) bool {
		rec.AddAttrs(a)
		return true
	})
	rec.AddAttrs(slog.Int("repeated", w.repeats))
	if w.timer != nil {
		w.timer.Stop()
	}
	w.start, w.repeats, w.last, w.timer = now, 0, slog.Record{}, nil
	return &summary{inner: w.inner, rec: rec}
}

// sweep forgets, once per interval, the failures not seen for an interval,
// so that many different ones do not pile up in memory.
func (c *counter) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < c.interval {
		return
	}
	c.lastSweep = now
	for k, w := range c.windows {
		if w.repeats == 0 && now.Sub(w.start) >= c.interval {
			delete(c.windows, k)
		}
	}
}

func (c *counter) writeAttrs(b *strings.Builder, as []slog.Attr) {
	for _, a := range as {
		c.writeAttr(b, a)
	}
}

// writeAttr adds an attribute to an identity, unless it is one that varies.
func (c *counter) writeAttr(b *strings.Builder, a slog.Attr) {
	if c.vary[a.Key] {
		return
	}
	v := a.Value.Resolve()
	b.WriteString(a.Key)
	if v.Kind() == slog.KindGroup {
		b.WriteByte('{')
		c.writeAttrs(b, v.Group())
		b.WriteByte('}')
		return
	}
	b.WriteByte('=')
	b.WriteString(v.String())
	b.WriteByte(0)
}

// span shows how long a count was taken over: in seconds, or in
// milliseconds when shorter.
func span(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
