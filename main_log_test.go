package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// The process log that serve wires writes a failure repeated by every
// request or engine tick once, then its count, still redacted; the request
// lines' own attributes do not make a repeat another failure.
func TestTheProcessLogWritesARepeatedFailureOnceThenItsCount(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			log, flush := newLogger(config.Log{Level: "info", Format: format}, &out, redact.New(nil))
			refused := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
			for i := range 500 {
				log.Error("claim failed", "err", refused)
				log.Error("request", "path", "/links", "status", 500, "took", i, "ip", "127.0.0.1", "request_id", i)
				log.Warn("scheduled task failed", "task", "send", "password", "hunter2", "err", refused)
			}
			log.Error("claim failed", "err", errors.New("ERROR: disk full (SQLSTATE 53100)"))
			flush()
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			require.Len(t, lines, 7, "three failures once each, a different one at once, three counts:\n%s", out.String())
			require.Contains(t, lines[3], "disk full", "a distinct failure is not swallowed")
			require.Contains(t, out.String(), "repeated 499 times in the last")
			require.NotContains(t, out.String(), "hunter2", "count lines pass the redactor too")
		})
	}
}
