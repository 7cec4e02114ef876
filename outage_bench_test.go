package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// BenchmarkDatabaseOutage measures what a syncdesk binary answers and logs
// while its Postgres is down. It starts a private Postgres cluster (initdb
// under a temp dir, on its own loopback port — never a shared server), a
// sandbox CRM and the binary, drives a bounded API load at it over loopback
// (PUT then GET of a record by each client, no back-off), stops the cluster
// for a while, starts it again, and logs per phase the status codes answered
// and the log lines written, by level, with the most frequent messages of the
// outage, to stdout. It runs the scenario (about 35 s) once, whatever b.N:
//
//	go test -run '^$' -bench DatabaseOutage -benchtime 1x .
//
// The environment changes what is measured and how (defaults in brackets):
//
//	SYNCDESK_OUTAGE_BIN      the binary to measure [built from this tree]
//	SYNCDESK_OUTAGE_PGBIN    where initdb and pg_ctl are [/usr/lib/postgresql/15/bin]
//	SYNCDESK_OUTAGE_PORT     loopback port of the private cluster [55471]
//	SYNCDESK_OUTAGE_CLIENTS  concurrent API clients [8]
//	SYNCDESK_OUTAGE_WARMUP   load before the outage [5s]
//	SYNCDESK_OUTAGE_DOWN     how long Postgres stays stopped [20s]
//	SYNCDESK_OUTAGE_AFTER    load after Postgres is back [10s]
//	SYNCDESK_OUTAGE_LOG      also save the binary's log lines, other than INFO, to this file
//
// To compare with an earlier version, build it elsewhere (git worktree add
// /tmp/before REV && go -C /tmp/before build -o /tmp/syncdesk-before .) and
// run again with SYNCDESK_OUTAGE_BIN=/tmp/syncdesk-before. Without initdb the
// benchmark is skipped; like every benchmark, plain `go test` never runs it.
//
// The metrics, all of them while Postgres was stopped unless said:
// 5xx-down (answers with a 5xx status), pct-503-retry-after-down (the share
// of the answers that were a 503 with Retry-After, in percent), answers-down,
// ERROR-lines-down and WARN-lines-down (log lines of that level), and
// 5xx-after (5xx answers once Postgres was back). The wall time per op is
// left out: the scenario lasts as long as the settings say.
func BenchmarkDatabaseOutage(b *testing.B) {
	if b.N > 1 && lastOutage.b == b {
		// The framework calls again with a larger b.N after the first call
		// (e.g. -benchtime 5x). The figures do not depend on b.N, so the
		// first call's stand rather than another 35 s run.
		lastOutage.t.reportMetrics(b)
		return
	}
	o, err := outageOptionsFromEnv()
	require.NoError(b, err)
	if _, err := os.Stat(filepath.Join(o.pgBin, "initdb")); err != nil {
		skip(b, fmt.Sprintf("needs a private Postgres cluster: no initdb in %s (set SYNCDESK_OUTAGE_PGBIN to where initdb and pg_ctl are): %v", o.pgBin, err))
	}
	if o.bin == "" {
		o.bin = buildSyncdesk(b)
	}
	t := measureOutage(b, o)
	// To stdout, not b.Log: the framework cuts a benchmark's log at 10 lines.
	fmt.Printf("%s:\n%s", b.Name(), t.table(o))
	lastOutage.b, lastOutage.t = b, t
	t.reportMetrics(b)
}

// skip skips the benchmark with its reason, also written to stderr without
// -v, where the framework would otherwise print nothing for a skipped
// benchmark.
func skip(b *testing.B, reason string) {
	if !testing.Verbose() {
		fmt.Fprintf(os.Stderr, "%s skipped: %s\n", b.Name(), reason)
	}
	b.Skip(reason)
}

// lastOutage is the last scenario's tally and the benchmark run it was
// measured for, reported again when the framework asks that run for a larger
// b.N. (Each -count is a new *testing.B and runs the scenario again.)
var lastOutage struct {
	b *testing.B
	t *tally
}

// outageOptions are the benchmark's settings, from SYNCDESK_OUTAGE_*.
type outageOptions struct {
	bin     string
	pgBin   string
	port    int
	clients int
	warmup  time.Duration
	down    time.Duration
	after   time.Duration
	logTo   string
}

func outageOptionsFromEnv() (outageOptions, error) {
	var env envSettings
	o := outageOptions{
		bin:     env.text("SYNCDESK_OUTAGE_BIN", ""),
		pgBin:   env.text("SYNCDESK_OUTAGE_PGBIN", "/usr/lib/postgresql/15/bin"),
		port:    env.number("SYNCDESK_OUTAGE_PORT", 55471, 1, 65535),
		clients: env.number("SYNCDESK_OUTAGE_CLIENTS", 8, 1, 1000),
		warmup:  env.duration("SYNCDESK_OUTAGE_WARMUP", 5*time.Second),
		down:    env.duration("SYNCDESK_OUTAGE_DOWN", 20*time.Second),
		after:   env.duration("SYNCDESK_OUTAGE_AFTER", 10*time.Second),
		logTo:   env.text("SYNCDESK_OUTAGE_LOG", ""),
	}
	return o, env.err
}

// envSettings reads settings from the environment and keeps the first one
// that does not parse.
type envSettings struct{ err error }

func (e *envSettings) text(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func (e *envSettings) number(name string, def, lo, hi int) int {
	v := e.text(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err == nil && (n < lo || n > hi) {
		err = fmt.Errorf("not between %d and %d", lo, hi)
	}
	e.fail(name, v, err)
	return n
}

func (e *envSettings) duration(name string, def time.Duration) time.Duration {
	v := e.text(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err == nil && d <= 0 {
		err = fmt.Errorf("not a positive duration such as 20s")
	}
	e.fail(name, v, err)
	return d
}

func (e *envSettings) fail(name, value string, err error) {
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("%s=%q: %w", name, value, err)
	}
}

// measureOutage runs the scenario and returns what it counted. Whatever
// stops it, the cleanups stop the load, the binary and the private cluster
// and remove the cluster's folder.
func measureOutage(b *testing.B, o outageOptions) *tally {
	pg := startCluster(b, o.pgBin, o.port)
	dsn := pg.createDB(b, "syncdesk")
	crm := httptest.NewServer(sandbox.NewCRM(sandbox.Options{}))
	b.Cleanup(crm.Close)
	conf := filepath.Join(pg.dir, "syncdesk.yaml")
	require.NoError(b, os.WriteFile(conf, []byte(outageConfigYAML(dsn, crm.URL)), 0o600))
	token := prepareOutage(b, o.bin, conf)

	t := newTally()
	if o.logTo != "" {
		f, err := os.Create(o.logTo)
		require.NoError(b, err, "SYNCDESK_OUTAGE_LOG")
		b.Cleanup(func() { _ = f.Close() })
		t.save = f
	}
	srv := startServer(b, o.bin, conf, t)
	load := startLoad(srv.addr, token, o.clients, t)
	b.Cleanup(load.stop)

	time.Sleep(o.warmup)
	t.enter(phaseDown)
	downAt := time.Now()
	require.NoError(b, pg.stop(), "stop the private cluster")
	time.Sleep(o.down - time.Since(downAt))
	require.NoError(b, pg.start(), "start the private cluster again")
	t.enter(phaseAfter)
	time.Sleep(o.after)
	load.stop()
	srv.stop()
	return t
}

func outageConfigYAML(dsn, crmURL string) string {
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

// prepareOutage migrates the database and returns a new API token.
func prepareOutage(b *testing.B, bin, conf string) string {
	b.Helper()
	out, err := syncdeskCommand(bin, "migrate", "--config", conf).CombinedOutput()
	require.NoError(b, err, "migrate: %s", out)
	out, err = syncdeskCommand(bin, "token", "create", "load", "--config", conf).Output()
	require.NoError(b, err, "token create")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// reportMetrics reports the key figures of the outage.
func (t *tally) reportMetrics(b *testing.B) {
	t.mu.Lock()
	defer t.mu.Unlock()
	down, after := t.statuses[phaseDown], t.statuses[phaseAfter]
	answers := total(down, func(string) bool { return true })
	retryAfter := down[retryAfter503]
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(total(down, isServerError)), "5xx-down")
	b.ReportMetric(percent(retryAfter, answers), "pct-503-retry-after-down")
	b.ReportMetric(float64(answers), "answers-down")
	b.ReportMetric(float64(t.levels[phaseDown]["ERROR"]), "ERROR-lines-down")
	b.ReportMetric(float64(t.levels[phaseDown]["WARN"]), "WARN-lines-down")
	b.ReportMetric(float64(total(after, isServerError)), "5xx-after")
}

func isServerError(status string) bool { return strings.HasPrefix(status, "5") }

func total(statuses map[string]int, counts func(status string) bool) int {
	n := 0
	for status, k := range statuses {
		if counts(status) {
			n += k
		}
	}
	return n
}

func percent(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}
