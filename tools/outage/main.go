// Command outage measures what a syncdesk binary answers and logs while its
// Postgres is down. It starts a private Postgres cluster (initdb under a temp
// dir, on its own loopback port — never the shared server), a sandbox CRM and
// the binary, drives a bounded API load at it over loopback (PUT and GET of
// records), stops the cluster for -down, starts it again, and prints per
// phase the status codes answered and the log lines written, by level, with
// the most frequent messages of the outage.
//
//	go build -o /tmp/syncdesk . && go run ./tools/outage -bin /tmp/syncdesk
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// options are the command's flags.
type options struct {
	bin     string
	pgBin   string
	port    int
	clients int
	warmup  time.Duration
	down    time.Duration
	after   time.Duration
	logTo   string
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "the syncdesk binary to measure (required)")
	flag.StringVar(&o.pgBin, "pgbin", "/usr/lib/postgresql/15/bin", "where initdb and pg_ctl are")
	flag.IntVar(&o.port, "port", 55471, "loopback port of the private Postgres cluster")
	flag.IntVar(&o.clients, "clients", 8, "concurrent API clients")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "load before the outage")
	flag.DurationVar(&o.down, "down", 20*time.Second, "how long Postgres stays stopped")
	flag.DurationVar(&o.after, "after", 10*time.Second, "load after Postgres is back")
	flag.StringVar(&o.logTo, "log", "", "also save the binary's log lines, other than INFO, to this file")
	flag.Parse()
	if o.bin == "" {
		fmt.Fprintln(os.Stderr, "outage: -bin is required")
		os.Exit(2)
	}
	if err := measure(o); err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(1)
	}
}

// Phases of a measurement, in order.
const (
	phaseWarmup = iota
	phaseDown
	phaseAfter
	phaseCount
)

var phaseNames = [phaseCount]string{"before the outage", "Postgres stopped", "after Postgres is back"}

// tally counts what happened in each phase.
type tally struct {
	mu       sync.Mutex
	phase    atomic.Int32
	statuses [phaseCount]map[string]int
	levels   [phaseCount]map[string]int
	lines    [phaseCount]int
	messages [phaseCount]map[string]int
	started  [phaseCount]time.Time
	save     io.Writer // where lines other than INFO are copied, if anywhere
}

func newTally() *tally {
	t := &tally{}
	for i := range phaseCount {
		t.statuses[i], t.levels[i], t.messages[i] = map[string]int{}, map[string]int{}, map[string]int{}
	}
	t.started[phaseWarmup] = time.Now()
	return t
}

func (t *tally) enter(p int) {
	t.mu.Lock()
	t.started[p] = time.Now()
	t.mu.Unlock()
	t.phase.Store(int32(p))
}

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

func measure(o options) error {
	dir, err := os.MkdirTemp("", "syncdesk-outage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pg := &cluster{bin: o.pgBin, dir: dir, port: o.port}
	if err := pg.init(); err != nil {
		return err
	}
	if err := pg.start(); err != nil {
		return err
	}
	defer pg.stop()
	dsn, err := pg.createDB("syncdesk")
	if err != nil {
		return err
	}
	crm := httptest.NewServer(sandbox.NewCRM(sandbox.Options{}))
	defer crm.Close()
	conf := filepath.Join(dir, "syncdesk.yaml")
	if err := os.WriteFile(conf, []byte(configYAML(dsn, crm.URL)), 0o600); err != nil {
		return err
	}
	token, err := prepare(o.bin, conf)
	if err != nil {
		return err
	}
	t := newTally()
	if o.logTo != "" {
		f, err := os.Create(o.logTo)
		if err != nil {
			return err
		}
		defer f.Close()
		t.save = f
	}
	srv, addr, err := serve(o.bin, conf, t)
	if err != nil {
		return err
	}
	load := startLoad(addr, token, o.clients, t)
	time.Sleep(o.warmup)
	t.enter(phaseDown)
	downAt := time.Now()
	if err := pg.stop(); err != nil {
		return err
	}
	time.Sleep(o.down - time.Since(downAt))
	if err := pg.start(); err != nil {
		return err
	}
	t.enter(phaseAfter)
	time.Sleep(o.after)
	load.stop()
	_ = srv.Process.Signal(syscall.SIGTERM)
	_ = srv.Wait()
	report(os.Stdout, o, t)
	return nil
}

func configYAML(dsn, crmURL string) string {
	return fmt.Sprintf(`addr: 127.0.0.1:0
db: %q
log: {level: info, format: text}
services:
  crm:
    kind: http
    base_url: %q
    timeout: 5s
    retry: {max_attempts: 3, base: 1s, max: 1m}
    objects:
      order:
        remote: deal
        external_key: "site_order_{local_id}"
        key_field: external_key
        id_field: id
        create: POST /deals
        update: PUT /deals/{external_id}
        lookup: GET /deals?external_key={external_key}
`, dsn, crmURL)
}

// prepare migrates the database and returns a new API token.
func prepare(bin, conf string) (string, error) {
	if out, err := exec.Command(bin, "migrate", "--config", conf).CombinedOutput(); err != nil {
		return "", fmt.Errorf("migrate: %v: %s", err, out)
	}
	out, err := exec.Command(bin, "token", "create", "load", "--config", conf).Output()
	if err != nil {
		return "", fmt.Errorf("token create: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

var runningRe = regexp.MustCompile(`is running at https?://(\S+)`)

// serve starts the binary, counts its log lines, and returns its address.
func serve(bin, conf string, t *tally) (*exec.Cmd, string, error) {
	cmd := exec.Command(bin, "serve", "--config", conf)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			t.logLine(sc.Text())
		}
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := runningRe.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return cmd, a, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return nil, "", errors.New("syncdesk did not print its address within 30s")
	}
}

// load is the running API clients.
type load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (l *load) stop() { l.cancel(); l.wg.Wait() }

// startLoad runs clients that each PUT a record and GET it back, over and over.
func startLoad(addr, token string, clients int, t *tally) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for c := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				url := fmt.Sprintf("http://%s/api/v1/records/order/c%d-%d", addr, c, i%50)
				body := fmt.Sprintf(`{"title": "order %d of client %d", "n": %d}`, i%50, c, i)
				call(ctx, hc, http.MethodPut, url, token, body, t)
				call(ctx, hc, http.MethodGet, url, token, "", t)
			}
		}()
	}
	return l
}

func call(ctx context.Context, hc *http.Client, method, url, token, body string, t *tally) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if ctx.Err() != nil {
		return // the load was stopped mid-call: not an answer
	}
	if err != nil {
		t.answer("no answer")
		return
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	status := fmt.Sprint(res.StatusCode)
	if res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "" {
		status += " (Retry-After)"
	}
	t.answer(status)
}

func report(w io.Writer, o options, t *tally) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(w, "binary %s, %d clients (PUT then GET of a record), Postgres stopped for %s\n", o.bin, o.clients, o.down)
	for p := range phaseCount {
		fmt.Fprintf(w, "\n%s:\n  answers: %s\n  log lines: %d (%s)\n", phaseNames[p], counts(t.statuses[p]), t.lines[p], counts(t.levels[p]))
		if p == phaseDown {
			fmt.Fprintln(w, "  most frequent log messages:")
			for _, kv := range sorted(t.messages[p], 12) {
				fmt.Fprintf(w, "    %6d  %s\n", kv.n, kv.k)
			}
		}
	}
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

// cluster is a private Postgres cluster under a temp dir.
type cluster struct {
	bin, dir string
	port     int
	running  bool
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// init creates the cluster. Postgres refuses to run as root, so as root
// it runs as the postgres user.
func (c *cluster) init() error {
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres:", c.dir).CombinedOutput(); err != nil {
			return fmt.Errorf("chown %s: %v: %s", c.dir, err, out)
		}
	}
	return c.run("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "--no-sync")
}

func (c *cluster) start() error {
	err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "postgres.log"), "-w", "-o",
		fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off", c.port, c.dir), "start")
	c.running = err == nil
	return err
}

func (c *cluster) stop() error {
	if !c.running {
		return nil
	}
	c.running = false
	return c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
}

func (c *cluster) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, name)}, args...)...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, out)
	}
	return nil
}

// createDB creates a database in the cluster and returns its URL.
func (c *cluster) createDB(name string) (string, error) {
	admin, err := models.Open(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port))
	if err != nil {
		return "", err
	}
	defer models.Close(admin)
	if err := admin.Exec(`CREATE DATABASE "` + name + `"`).Error; err != nil {
		return "", err
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name), nil
}
