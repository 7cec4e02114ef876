// Package browsertest starts a headless Chromium for the browser tests,
// driven through chromedp.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Parallel starts a browser test: each takes seconds (a tab, a server and
// a database), so -short skips it, and it runs beside the other browser
// tests, with which it shares nothing but the Chromium process (go test
// -parallel bounds how many at once). Call it first, before the test's
// setup.
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

// New returns a chromedp context on a tab of its own in a browser context
// of its own (cookies, storage and cache apart, as in a fresh profile) of
// the package's headless Chromium, or skips the test (fails it under
// CI=true) when no Chromium is installed, and under -short. The tab and its
// browser context go when the test ends.
func New(t *testing.T) context.Context {
	t.Helper()
	SkipShort(t)
	browser, err := shared.start()
	switch {
	case errors.Is(err, errNoChromium) && os.Getenv("CI") == "true":
		t.Fatal("no chromium under CI: .ci/run must install Debian's chromium package")
	case errors.Is(err, errNoChromium):
		t.Skip("browser test skipped: install Debian's chromium package (apt-get install chromium) to run it")
	case err != nil:
		t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first Do makes the tab and binds its life to ctx: it must have no
	// timeout. Each test's steps run under a deadline derived after.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	tctx, cancelSteps := context.WithTimeout(ctx, 180*time.Second) // generous: CI runs packages in parallel under -race
	t.Cleanup(cancelSteps)
	return tctx
}

// Run runs a package's tests and then stops the Chromium they shared; a
// package with browser tests calls it from its TestMain.
func Run(m *testing.M) int {
	code := m.Run()
	shared.stop()
	return code
}

var errNoChromium = errors.New("no chromium installed")

// shared is the package's one headless Chromium, started by the first
// browser test. Each test has a browser context of its own in it: a
// Chromium per test cost a second of CPU to start, thirty-odd times over.
var shared browserProcess

type browserProcess struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab, which keeps it running
	cancel func()
	err    error
}

func (p *browserProcess) start() (context.Context, error) {
	p.once.Do(func() {
		path := findChromium()
		if path == "" {
			p.err = errNoChromium
			return
		}
		dir, err := os.MkdirTemp("", "syncdesk-chromium-")
		if err != nil {
			p.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.UserDataDir(dir),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.WindowSize(1280, 860),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(actx)
		p.ctx = ctx
		p.cancel = func() { cancelCtx(); cancelAlloc(); _ = os.RemoveAll(dir) }
		if err := chromedp.Do(ctx); err != nil {
			p.cancel()
			p.err = fmt.Errorf("start chromium at %s: %w", path, err)
		}
	})
	return p.ctx, p.err
}

func (p *browserProcess) stop() {
	if p.cancel != nil {
		p.cancel()
	}
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
