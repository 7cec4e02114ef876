package logdedup_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/logdedup"
	"github.com/syncdesk/syncdesk/sync/logdedup/logtest"
)

// bundle is a logger over a de-duplicating handler on a fake clock.
type bundle struct {
	log   *slog.Logger
	h     *logdedup.Handler
	out   *logtest.Buffer
	clock *clock.Fake
}

func setup(t *testing.T) *bundle {
	t.Helper()
	out := &logtest.Buffer{}
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	h := logdedup.New(slog.NewTextHandler(out, nil), logdedup.Options{Interval: 10 * time.Second,
		Vary: []string{"took", "request_id"}, Now: clk.Now})
	return &bundle{log: slog.New(h), h: h, out: out, clock: clk}
}

var errRefused = errors.New("failed to connect to `user=syncdesk`: dial tcp 127.0.0.1:5432: connect: connection refused")

func TestARepeatedFailureIsWrittenOnceAnIntervalWithACount(t *testing.T) {
	b := setup(t)
	for range 100 {
		b.log.Error("claim failed", "err", errRefused)
	}
	require.Len(t, b.out.Lines(), 1, "100 repeats within the interval are one line: %v", b.out.Lines())
	require.Contains(t, b.out.Lines()[0], `msg="claim failed"`)
	require.Contains(t, b.out.Lines()[0], "connection refused")

	b.clock.Advance(10 * time.Second)
	b.log.Error("claim failed", "err", errRefused) // the interval has ended: its count is written first
	b.clock.Advance(3 * time.Second)
	b.log.Error("claim failed", "err", errRefused)
	b.h.Flush() // at a stop: the counts not yet written
	lines := b.out.Lines()
	require.Len(t, lines, 3, "%v", lines)
	require.Contains(t, lines[1], `msg="claim failed (repeated 99 times in the last 10s)"`)
	require.Contains(t, lines[1], "repeated=99")
	require.Contains(t, lines[1], "connection refused", "the count line says which failure it counts")
	require.Contains(t, lines[2], `msg="claim failed (repeated 2 times in the last 3s)"`)
	b.h.Flush()
	require.Len(t, b.out.Lines(), 3, "a count is written once")
}

func TestAFailureThatStopsIsWrittenAgainInFullWhenItComesBack(t *testing.T) {
	b := setup(t)
	b.log.Warn("scheduled task failed", "task", "send", "err", errRefused)
	b.clock.Advance(30 * time.Second)
	b.log.Warn("scheduled task failed", "task", "send", "err", errRefused)
	lines := b.out.Lines()
	require.Len(t, lines, 2, "nothing was counted in between, so no count line: %v", lines)
	require.NotContains(t, lines[1], "repeated")
}

func TestDistinctFailuresAreEachWritten(t *testing.T) {
	b := setup(t)
	other := errors.New("ERROR: disk full (SQLSTATE 53100)")
	for range 3 {
		b.log.Error("claim failed", "err", errRefused)
		b.log.Error("claim failed", "err", other)                              // another error
		b.log.Error("write outcomes", "err", errRefused)                       // another message
		b.log.Warn("claim failed", "err", errRefused)                          // another level
		b.log.Warn("scheduled task failed", "task", "send", "err", errRefused) // another task
		b.log.Warn("scheduled task failed", "task", "rescue-expired-leases", "err", errRefused)
		b.log.With("service", "crm").Error("claim failed", "err", errRefused) // another scope
		b.log.WithGroup("outbox").Error("claim failed", "err", errRefused)
		b.log.Error("request failed", "path", "/links/1", "err", errRefused) // another path
		b.log.Error("request failed", "path", "/links/2", "err", errRefused)
	}
	lines := b.out.Lines()
	require.Len(t, lines, 10, "each distinct failure is written at once, its repeats counted: %v", lines)
	for _, want := range []string{"disk full", "write outcomes", "level=WARN", "task=rescue-expired-leases",
		"service=crm", "outbox.err=", "path=/links/2"} {
		require.Contains(t, strings.Join(lines, "\n"), want)
	}
	b.h.Flush()
	lines = b.out.Lines()
	require.Len(t, lines, 20, "one count line per distinct failure: %v", lines)
	for _, l := range lines[10:] {
		require.Contains(t, l, "repeated 2 times", l)
	}
}

func TestVaryingAttributesDoNotMakeAnotherFailure(t *testing.T) {
	b := setup(t)
	b.log.Error("request", "path", "/links", "status", 500, "took", time.Millisecond, "request_id", "a")
	b.log.Error("request", "path", "/links", "status", 500, "took", 2*time.Millisecond, "request_id", "b")
	b.log.Error("request", "path", "/links", "status", 502, "took", time.Millisecond, "request_id", "c")
	lines := b.out.Lines()
	require.Len(t, lines, 2, "took and request_id vary, status does not: %v", lines)
	require.Contains(t, lines[1], "status=502")
	b.h.Flush()
	require.Contains(t, b.out.Lines()[2], "request_id=b", "the count line carries the latest occurrence's attributes")
}

func TestInfoAndDebugAreNeverCounted(t *testing.T) {
	b := setup(t)
	for range 50 {
		b.log.Info("request", "method", "GET", "path", "/readyz", "status", 503)
	}
	b.h.Flush()
	require.Len(t, b.out.Lines(), 50, "every info line is written")
}

func TestTheCountIsWrittenWhenTheIntervalEndsWithoutAnotherRepeat(t *testing.T) {
	out := &logtest.Buffer{}
	h := logdedup.New(slog.NewTextHandler(out, nil), logdedup.Options{Interval: 50 * time.Millisecond})
	log := slog.New(h)
	for range 10 {
		log.Error("claim failed", "err", errRefused)
	}
	require.Len(t, out.Lines(), 1)
	require.Eventually(t, func() bool { return len(out.Lines()) == 2 }, 5*time.Second, 10*time.Millisecond,
		"the interval's timer writes the count: %v", out.Lines())
	require.Contains(t, out.Lines()[1], "repeated 9 times in the last")
}

func TestConcurrentRepeatsAreCountedExactly(t *testing.T) {
	b := setup(t)
	const writers, each = 64, 50
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				b.log.Error("claim failed", "err", errRefused)
				b.log.Info("request", "status", 503)
			}
		}()
	}
	wg.Wait()
	b.h.Flush()
	var failures, counted, info int
	for _, l := range b.out.Lines() {
		switch {
		case strings.Contains(l, "repeated="):
			counted++
			require.Contains(t, l, "repeated=3199", "every repeat is counted: %s", l)
		case strings.Contains(l, "claim failed"):
			failures++
		case strings.Contains(l, "level=INFO"):
			info++
		}
	}
	require.Equal(t, 1, failures, "written once")
	require.Equal(t, 1, counted, "then one count")
	require.Equal(t, writers*each, info, "info lines all written")
}
