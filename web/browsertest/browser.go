// Package browsertest starts a headless Chromium for the browser tests,
// driven through chromedp.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Parallel starts a browser test: each takes seconds (a Chromium of its
// own, a server and a database), so -short skips it, and it runs beside the
// other browser tests, with which it shares nothing (go test -parallel
// bounds how many at once). Call it first, before the test's setup.
func Parallel(t *testing.T) {
	t.Helper()
	SkipShort(t)
	t.Parallel()
}

// SkipShort skips a browser test under -short, for one that cannot run in
// parallel.
func SkipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped under -short; go test ./... runs it")
	}
}

// New returns a chromedp context on a fresh headless Chromium, or skips the
// test (fails it under CI=true) when no Chromium is installed, and under
// -short.
func New(t *testing.T) context.Context {
	t.Helper()
	SkipShort(t)
	path := findChromium()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium under CI: .ci/run must install Debian's chromium package")
		}
		t.Skip("browser test skipped: install Debian's chromium package (apt-get install chromium) to run it")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 860),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first Do starts the browser and binds its life to ctx: it must
	// have no timeout. Each test's steps run under a deadline derived after.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium at %s: %v", path, err)
	}
	tctx, cancel := context.WithTimeout(ctx, 180*time.Second) // generous: CI runs packages in parallel under -race
	t.Cleanup(cancel)
	return tctx
}

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Screenshot saves a full-page PNG under $SYNCDESK_SCREENSHOTS when that is
// set; the README's pictures are made this way.
func Screenshot(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("SYNCDESK_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
