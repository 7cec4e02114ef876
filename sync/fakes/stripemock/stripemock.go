// Package stripemock starts Stripe's official mock server, stripe-mock
// (github.com/stripe/stripe-mock), for a test. stripe-mock answers every
// endpoint of Stripe's published OpenAPI definition and refuses, with a
// 400, any request that definition does not allow: an unknown parameter, a
// value of the wrong type, a required parameter left out, a body that is
// not form-encoded. It keeps no state (every answer is a fixture with some
// of the request's values echoed) and honours no idempotency key, so tests
// use it to check that requests are well-formed, and the fakes in
// sync/fakes for behaviour.
//
// Its version is pinned in go.mod as a tool; .ci/run installs it with
// `go install github.com/stripe/stripe-mock`.
package stripemock

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Module is stripe-mock's Go module path.
const Module = "github.com/stripe/stripe-mock"

// InstallHint says how to get the pinned binary, for skip and failure messages.
const InstallHint = "install it from the repository root with `go install " + Module + "` (the version pinned in go.mod)"

// APIKey is a test-mode secret key: stripe-mock accepts any key that looks
// like one.
const APIKey = "sk_test_stripemock"

// Server is a running stripe-mock.
type Server struct {
	// URL is its base URL, http://127.0.0.1:PORT, without a trailing slash.
	URL string
}

// Start runs stripe-mock on a free loopback port until the test ends.
// Without the binary it fails the test when CI=true and skips it
// otherwise, saying how to install it.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("stripe-mock is needed and missing (%v): %s", err, InstallHint)
		}
		t.Skipf("stripe-mock is not installed (%v): %s", err, InstallHint)
	}
	if err := checkVersion(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("stripe-mock at %s: %v; %s", bin, err, InstallHint)
		}
		t.Skipf("stripe-mock at %s: %v; %s", bin, err, InstallHint)
	}
	url, err := start(t, bin)
	if err != nil {
		t.Fatalf("start stripe-mock (%s): %v", bin, err)
	}
	return &Server{URL: url}
}

// Find returns the stripe-mock binary: on PATH, else in $(go env GOPATH)/bin.
func Find() (string, error) {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		return "", fmt.Errorf("not on PATH, and `go env GOPATH` failed: %w", err)
	}
	lines := strings.Split(string(out), "\n") // GOBIN, then GOPATH; GOBIN is often empty
	var dirs []string
	if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
		dirs = append(dirs, strings.TrimSpace(lines[0]))
	}
	if len(lines) > 1 {
		for _, gp := range filepath.SplitList(strings.TrimSpace(lines[1])) {
			dirs = append(dirs, filepath.Join(gp, "bin"))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, "stripe-mock")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("not on PATH nor in %s", strings.Join(dirs, ", "))
}

// checkVersion refuses a binary built from another version than the one
// go.mod pins: requests would be checked against another API definition.
func checkVersion(bin string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("cannot read its build information: %w", err)
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", Module).Output()
	if err != nil {
		return fmt.Errorf("cannot read the version go.mod pins (go list -m %s): %w", Module, err)
	}
	want := strings.TrimSpace(string(out))
	if info.Main.Path != Module || info.Main.Version != want {
		return fmt.Errorf("it is %s %s, go.mod pins %s", info.Main.Path, info.Main.Version, want)
	}
	return nil
}

// listening is the line stripe-mock prints once its HTTP listener is up.
var listening = regexp.MustCompile(`Listening for HTTP at address: (127\.0\.0\.1:\d+)`)

// start launches bin and waits until it answers. Both listeners are put on
// loopback with a port the system picks: given -http-addr, stripe-mock
// also opens HTTPS, by default on :12112 of every interface, which two
// tests at once would fight over.
func start(t testing.TB, bin string) (string, error) {
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", fmt.Errorf("pipe its output: %w", err)
	}
	cmd.Stderr = cmd.Stdout // it prints its address on either, by version
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("run it: %w", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go scanAddress(out, addr)
	select {
	case a, ok := <-addr:
		if !ok {
			return "", errors.New("it exited or closed its output before saying where it listens")
		}
		url := "http://" + a
		return url, waitReady(url, 20*time.Second)
	case <-time.After(20 * time.Second):
		return "", errors.New("it did not say where it listens within 20s")
	}
}

// scanAddress sends the listening address once seen, then drains the rest
// of the output so the process never blocks on a full pipe.
func scanAddress(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text()); m != nil && !sent {
			addr <- m[1]
			sent = true
		}
	}
	if !sent {
		close(addr)
	}
	_, _ = io.Copy(io.Discard, r)
}

// waitReady polls until stripe-mock answers an authenticated list.
func waitReady(url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/customers", nil)
		req.Header.Set("Authorization", "Bearer "+APIKey)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("answered %s", res.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s: %w", within, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
