package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name      string
		status    int
		err       error
		wrote     bool
		keyed     bool // the request carried an Idempotency-Key
		class     Class
		ambiguous bool
	}{
		{"200", 200, nil, true, false, OK, false},
		{"201", 201, nil, true, false, OK, false},
		{"204", 204, nil, true, false, OK, false},
		{"400 validation", 400, nil, true, false, Permanent, false},
		{"401 auth", 401, nil, true, false, Permanent, false},
		{"403 forbidden", 403, nil, true, false, Permanent, false},
		{"404 not found", 404, nil, true, false, Permanent, false},
		{"409 conflict, no key sent", 409, nil, true, false, Permanent, false},
		{"422 validation", 422, nil, true, false, Permanent, false},
		{"408 timeout", 408, nil, true, false, Temporary, false},
		{"425 too early", 425, nil, true, false, Temporary, false},
		{"429 rate limit", 429, nil, true, false, Temporary, false},
		{"500", 500, nil, true, false, Temporary, true},
		{"502 gateway", 502, nil, true, false, Temporary, true},
		{"503", 503, nil, true, false, Temporary, true},
		{"504 gateway timeout", 504, nil, true, false, Temporary, true},
		{"refused", 0, refused, false, false, Temporary, false},
		{"timeout after sending", 0, context.DeadlineExceeded, true, false, Temporary, true},
		{"timeout before sending", 0, context.DeadlineExceeded, false, false, Temporary, false},
		{"reset after sending", 0, reset, true, false, Temporary, true},
		{"EOF after sending", 0, io.ErrUnexpectedEOF, true, false, Temporary, true},
		// Carrying an Idempotency-Key, a 409 says an earlier request holding the key
		// is still running: retry; it may have taken effect. Other answers as without.
		{"409 to a keyed request", 409, nil, true, true, Temporary, true},
		{"422 to a keyed request", 422, nil, true, true, Permanent, false},
		{"201 to a keyed request", 201, nil, true, true, OK, false},
		{"503 to a keyed request", 503, nil, true, true, Temporary, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class, amb := Classify(tc.status, tc.err, tc.wrote, tc.keyed)
			require.Equal(t, tc.class, class)
			require.Equal(t, tc.ambiguous, amb)
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	limit := time.Hour
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"0", 0},
		{"-5", 0},
		{"999999999999", limit},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), limit},
		{"soon", 0},
	} {
		require.Equal(t, tc.want, RetryAfter(tc.v, now, limit), "Retry-After %q", tc.v)
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "7", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "1e9", "99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := RetryAfter(v, now, time.Hour)
		if d < 0 || d > time.Hour {
			t.Fatalf("RetryAfter(%q) = %v, outside [0, 1h]", v, d)
		}
	})
}

func TestDescribe(t *testing.T) {
	require.Contains(t, Describe(context.DeadlineExceeded, true, 5*time.Second), "whether it took effect is unknown")
	require.Contains(t, Describe(fmt.Errorf("x: %w", errors.New("boom")), true, time.Second), "dropped after the request was sent")
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	require.Contains(t, Describe(refused, false, time.Second), "connection refused")
}
