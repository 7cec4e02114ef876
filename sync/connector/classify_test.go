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
		class     Class
		ambiguous bool
	}{
		{"200", 200, nil, true, OK, false},
		{"201", 201, nil, true, OK, false},
		{"204", 204, nil, true, OK, false},
		{"400 validation", 400, nil, true, Permanent, false},
		{"401 auth", 401, nil, true, Permanent, false},
		{"403 forbidden", 403, nil, true, Permanent, false},
		{"404 not found", 404, nil, true, Permanent, false},
		{"409 conflict", 409, nil, true, Permanent, false},
		{"422 validation", 422, nil, true, Permanent, false},
		{"408 timeout", 408, nil, true, Temporary, false},
		{"425 too early", 425, nil, true, Temporary, false},
		{"429 rate limit", 429, nil, true, Temporary, false},
		{"500", 500, nil, true, Temporary, true},
		{"502 gateway", 502, nil, true, Temporary, true},
		{"503", 503, nil, true, Temporary, true},
		{"504 gateway timeout", 504, nil, true, Temporary, true},
		{"refused", 0, refused, false, Temporary, false},
		{"timeout after sending", 0, context.DeadlineExceeded, true, Temporary, true},
		{"timeout before sending", 0, context.DeadlineExceeded, false, Temporary, false},
		{"reset after sending", 0, reset, true, Temporary, true},
		{"EOF after sending", 0, io.ErrUnexpectedEOF, true, Temporary, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class, amb := Classify(tc.status, tc.err, tc.wrote)
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
