package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A bad tracing setting stops the start, naming it.
func TestBadTracingSettingStopsTheStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "syncdesk.yaml")
	require.NoError(t, os.WriteFile(file, []byte("demo: true\ntracing: {otlp_endpoint: \"127.0.0.1:4318\", sample_ratio: 2}\n"), 0o600))
	code, _, errOut := cmd(t, "", "--config", file, "--db", "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "setting tracing.sample_ratio: must be between 0 and 1")
}

// Configured, the demo's sends reach the collector as spans, with the
// collector's key in its header and nowhere in what it is sent; the last
// ones are exported at the stop.
func TestTracesReachTheConfiguredCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const key = "collector-key-in-the-header-only"
	var mu sync.Mutex
	var bodies [][]byte
	var auths []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies, auths = append(bodies, b), append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()

	bin := buildSyncdesk(t)
	dir := t.TempDir()
	port := freePort(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "syncdesk.yaml"), []byte("demo: true\ntracing:\n  otlp_endpoint: \""+
		strings.TrimPrefix(collector.URL, "http://")+"\"\n  headers: {Authorization: \"Bearer ${TEST_COLLECTOR_KEY}\"}\n"), 0o600))
	srv := syncdeskCommand(bin, "--config", "syncdesk.yaml")
	srv.Dir = dir
	srv.Env = append(srv.Env, "SYNCDESK_ADDR=127.0.0.1:"+port, "TEST_COLLECTOR_KEY="+key)
	stdout, err := srv.StdoutPipe()
	require.NoError(t, err)
	srv.Stderr = os.Stderr
	require.NoError(t, srv.Start())
	defer srv.Process.Kill()
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && !strings.Contains(lines.Text(), "Press Ctrl-C") {
	}
	go func() {
		for lines.Scan() {
		}
	}()
	time.Sleep(3 * time.Second) // the demo's seeded records go out
	require.NoError(t, srv.Process.Signal(syscall.SIGINT))
	require.NoError(t, srv.Wait())

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, bodies, "spans reached the collector")
	all := bytes.Join(bodies, nil)
	require.Contains(t, string(all), "send ", "the engine's sends")
	require.Contains(t, string(all), "syncdesk.outcome")
	require.NotContains(t, string(all), key)
	for _, a := range auths {
		require.Equal(t, "Bearer "+key, a)
	}
}
