package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Phases of the outage scenario, in order.
const (
	phaseWarmup = iota
	phaseDown
	phaseAfter
	phaseCount
)

var phaseNames = [phaseCount]string{"before the outage", "Postgres stopped", "after Postgres is back"}

// retryAfter503 is how the tally names a 503 that carries Retry-After.
const retryAfter503 = "503 (Retry-After)"

// tally counts what the binary answered and logged in each phase.
type tally struct {
	mu       sync.Mutex
	phase    atomic.Int32
	statuses [phaseCount]map[string]int
	levels   [phaseCount]map[string]int
	lines    [phaseCount]int
	messages [phaseCount]map[string]int
	save     io.Writer // where lines other than INFO are copied, if anywhere
}

func newTally() *tally {
	t := &tally{}
	for i := range phaseCount {
		t.statuses[i], t.levels[i], t.messages[i] = map[string]int{}, map[string]int{}, map[string]int{}
	}
	return t
}

func (t *tally) enter(p int) { t.phase.Store(int32(p)) }

func (t *tally) answer(status string) {
	p := t.phase.Load()
	t.mu.Lock()
	t.statuses[p][status]++
	t.mu.Unlock()
}

var (
	levelRe = regexp.MustCompile(`\blevel=(\w+)`)
	msgRe   = regexp.MustCompile(`\bmsg=("(?:[^"\\]|\\.)*"|\S+)`)
)

func (t *tally) logLine(line string) {
	p := t.phase.Load()
	level, msg := "?", "?"
	if m := levelRe.FindStringSubmatch(line); m != nil {
		level = m[1]
	}
	if m := msgRe.FindStringSubmatch(line); m != nil {
		msg = m[1]
	}
	t.mu.Lock()
	t.lines[p]++
	t.levels[p][level]++
	t.messages[p][level+" "+msg]++
	if t.save != nil && level != "INFO" {
		fmt.Fprintln(t.save, line)
	}
	t.mu.Unlock()
}

// table is the per-phase account: answers, log lines by level, and the most
// frequent messages while Postgres was stopped.
func (t *tally) table(o outageOptions) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var w strings.Builder
	fmt.Fprintf(&w, "binary %s, %d clients (PUT then GET of a record), Postgres stopped for %s\n", o.bin, o.clients, o.down)
	for p := range phaseCount {
		fmt.Fprintf(&w, "\n%s:\n  answers: %s\n  log lines: %d (%s)\n", phaseNames[p], counts(t.statuses[p]), t.lines[p], counts(t.levels[p]))
		if p == phaseDown {
			fmt.Fprintln(&w, "  most frequent log messages:")
			for _, kv := range sorted(t.messages[p], 12) {
				fmt.Fprintf(&w, "    %6d  %s\n", kv.n, kv.k)
			}
		}
	}
	return w.String()
}

type kv struct {
	k string
	n int
}

func sorted(m map[string]int, limit int) []kv {
	var out []kv
	for k, n := range m {
		out = append(out, kv{k, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n || out[i].n == out[j].n && out[i].k < out[j].k })
	return out[:min(limit, len(out))]
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, e := range sorted(m, len(m)) {
		parts = append(parts, fmt.Sprintf("%s × %d", e.k, e.n))
	}
	return strings.Join(parts, ", ")
}

// server is the measured binary, serving, with its log lines counted.
type server struct {
	cmd      *exec.Cmd
	addr     string
	logsDone chan struct{}
	once     sync.Once
}

var runningRe = regexp.MustCompile(`is running at https?://(\S+)`)

// startServer starts the binary and returns once it has printed its
// address, which must be a loopback one. A cleanup stops it.
func startServer(b *testing.B, bin, conf string, t *tally) *server {
	b.Helper()
	s := &server{cmd: syncdeskCommand(bin, "serve", "--config", conf), logsDone: make(chan struct{})}
	stdout, err := s.cmd.StdoutPipe()
	require.NoError(b, err)
	stderr, err := s.cmd.StderrPipe()
	require.NoError(b, err)
	require.NoError(b, s.cmd.Start(), "start %s", bin)
	b.Cleanup(s.stop)
	go func() {
		defer close(s.logsDone)
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		for lines.Scan() {
			t.logLine(lines.Text())
		}
	}()
	addr := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if m := runningRe.FindStringSubmatch(lines.Text()); m != nil {
				select {
				case addr <- m[1]:
				default: // only the first address counts; keep draining
				}
			}
		}
	}()
	select {
	case s.addr = <-addr:
	case <-time.After(30 * time.Second):
		b.Fatal("syncdesk did not print its address within 30 s")
	}
	host, _, err := net.SplitHostPort(s.addr)
	require.NoError(b, err, "printed address %q", s.addr)
	require.True(b, net.ParseIP(host).IsLoopback(), "syncdesk listens on %s, not on loopback", s.addr)
	return s
}

// stop ends the binary with SIGTERM, as an operator would, and kills it if
// it is still running 10 s later. It reads the log to its end first (Wait
// closes the pipe), so the lines written on the way out are counted.
func (s *server) stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.logsDone:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
		}
		_ = s.cmd.Wait()
	})
}

// load is the running API clients.
type load struct {
	stopping atomic.Bool
	wg       sync.WaitGroup
}

// stop lets each client finish the request it is making (within its 5 s
// timeout) rather than cut it off: a request cancelled half way would be
// counted in the binary's log as one that failed.
func (l *load) stop() { l.stopping.Store(true); l.wg.Wait() }

// startLoad runs clients that each PUT a record and GET it back, over and
// over, one request at a time each: the load is bounded by the clients.
func startLoad(addr, token string, clients int, t *tally) *load {
	l := &load{}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for c := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; !l.stopping.Load(); i++ {
				url := fmt.Sprintf("http://%s/api/v1/records/order/c%d-%d", addr, c, i%50)
				body := fmt.Sprintf(`{"title": "order %d of client %d", "n": %d}`, i%50, c, i)
				t.answer(call(hc, http.MethodPut, url, token, body))
				t.answer(call(hc, http.MethodGet, url, token, ""))
			}
		}()
	}
	return l
}

// call makes one API request and returns how the tally names its answer.
func call(hc *http.Client, method, url, token, body string) string {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return "request not made: " + err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return "no answer"
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "" {
		return retryAfter503
	}
	return fmt.Sprint(res.StatusCode)
}
