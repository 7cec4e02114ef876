// Package logtest is a process log in memory, for tests that read what was
// logged while requests and goroutines are still writing.
package logtest

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer collects log lines; it is safe for concurrent writers and readers.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends to the log.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Lines returns the lines written so far that contain every one of parts.
func (b *Buffer) Lines(parts ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, line := range strings.Split(b.buf.String(), "\n") {
		if line != "" && containsAll(line, parts) {
			out = append(out, line)
		}
	}
	return out
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
