package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/logdedup/logtest"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// outageServer serves syncdesk like setup does, on db, with its log kept.
func outageServer(t *testing.T, db *gorm.DB) (*bundle, *logtest.Buffer) {
	t.Helper()
	b := setup(t, db)
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	rc, err := inbox.New(db, b.cfg.Services, b.clock, log, redact.New(nil))
	require.NoError(t, err)
	s, err := New(Deps{DB: db, Config: b.cfg, Clock: b.clock, Version: "test", Log: log, Outbox: b.eng, Inbox: rc})
	require.NoError(t, err)
	b.srv = httptest.NewServer(s.Handler())
	t.Cleanup(b.srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("the log:\n" + strings.Join(logs.Lines(), "\n"))
		}
	})
	return b, logs
}

// send makes an API call with a raw body and returns the whole answer.
func (a *api) send(method, path, body string) response {
	a.c.b.t.Helper()
	req, err := http.NewRequest(method, a.c.b.srv.URL+path, strings.NewReader(body))
	require.NoError(a.c.b.t, err)
	req.Header = a.auth.Clone()
	res, err := a.c.http.Do(req)
	require.NoError(a.c.b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(a.c.b.t, err)
	return response{status: res.StatusCode, header: res.Header, body: string(raw)}
}

// requireOutageAnswer checks a 503 that says when to come back and why.
func requireOutageAnswer(t *testing.T, r response, reason string) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
	require.Equal(t, "5", r.header.Get("Retry-After"), "a 503 says when to try again")
	require.Contains(t, r.body, reason)
}

// requireJSONReason checks an API answer's {"error": …} or a probe's {"reason": …}.
func requireJSONReason(t *testing.T, r response, key, reason string) {
	t.Helper()
	requireOutageAnswer(t, r, reason)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.body), &body), r.body)
	require.Contains(t, body[key], reason)
}

func TestProblemForADatabaseOutageIs503WithTheReason(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		reason string
	}{
		{fmt.Errorf("load session: %w", &pgconn.PgError{Code: "57P01"}), http.StatusServiceUnavailable, "cannot be reached"},
		{fmt.Errorf("finish: %w", &pgconn.PgError{Code: "53100"}), http.StatusServiceUnavailable, "cannot write (disk full?)"},
		{&pgconn.PgError{Code: "25006"}, http.StatusServiceUnavailable, "read-only"},
		// Two bulk batches that share records, in opposite orders: the one
		// Postgres undid is sent again, as README says of a 503.
		{fmt.Errorf("bulk upsert: %w", &pgconn.PgError{Code: "40P01"}), http.StatusServiceUnavailable, "changed nothing. Send it again."},
		{&pgconn.PgError{Code: "40001"}, http.StatusServiceUnavailable, "Send it again."},
		{fmt.Errorf("send: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}),
			http.StatusInternalServerError, "unexpected error"}, // a provider's, not the database's
	} {
		p := problemFor(c.err)
		require.Equal(t, c.status, p.Status, "%v", c.err)
		require.Contains(t, p.Message, c.reason)
	}
	require.Equal(t, "Not available right now", problemFor(&pgconn.PgError{Code: "08006"}).Title)
}

// proxy forwards loopback TCP connections to a target. Cut, it closes every
// connection and stops listening, as a server that is down; restored, it
// listens on the same address again.
type proxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target, conns: map[net.Conn]bool{}}
	p.listen("127.0.0.1:0")
	p.addr = p.ln.Addr().String()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	require.NoError(p.t, err)
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go p.accept(ln)
}

func (p *proxy) accept(ln net.Listener) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		if !p.track(in, out) {
			return
		}
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// track keeps both ends to close at a cut, unless the cut came first.
func (p *proxy) track(in, out net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_, _ = in.Close(), out.Close()
		return false
	}
	p.conns[in], p.conns[out] = true, true
	return true
}

func (p *proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_, _ = dst.Close(), src.Close()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *proxy) restore() { p.listen(p.addr) }

// A Postgres that cannot be reached (the connections cut, nothing listening)
// is answered 503 with Retry-After and the reason in words — JSON under
// /api/, the error page elsewhere, a failing /readyz — and logged as
// "database unavailable" with the request lines at INFO. When it is back,
// syncdesk answers again without a restart.
func TestAnUnreachablePostgresIsAnswered503WithRetryAfterAndTheReason(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(dbtest.PostgresURL(t))
	require.NoError(t, err)
	p := startProxy(t, u.Host)
	u.Host = p.addr
	b, logs := outageServer(t, dbtest.Open(t, u.String()))
	a := b.api()
	page := b.signedIn("ana@example.com", models.RoleViewer)
	require.Equal(t, http.StatusOK, a.send("PUT", "/api/v1/records/order/1", `{"title":"Order 1"}`).status)

	p.cut()
	const reason = "The database cannot be reached; syncdesk will answer again when it is back."
	requireJSONReason(t, a.send("PUT", "/api/v1/records/order/2", `{"title":"Order 2"}`), "error", reason)
	requireJSONReason(t, a.send("GET", "/api/v1/records/order/1", ""), "error", reason)
	requireJSONReason(t, b.client().get("/readyz"), "reason", reason) // a probe carries no session
	html := page.get("/links")
	requireOutageAnswer(t, html, "syncdesk will answer again when it is back.")
	require.Contains(t, html.header.Get("Content-Type"), "text/html")
	require.Contains(t, html.body, "Not available right now")

	require.NotEmpty(t, logs.Lines("level=ERROR", `msg="database unavailable"`, reason), "the cause is logged with its reason")
	require.Empty(t, logs.Lines("level=ERROR", "msg=request "), "a 503's request line is not an error")
	require.Len(t, logs.Lines("level=INFO", "msg=request ", "status=503"), 4, "each request keeps its line")

	p.restore()
	require.Eventually(t, func() bool { return b.client().get("/readyz").status == http.StatusOK }, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, http.StatusOK, a.send("PUT", "/api/v1/records/order/2", `{"title":"Order 2"}`).status)
}

// tinyDisk mounts a tmpfs of size bytes, unmounted when the test ends. Only
// root can mount: elsewhere the test is skipped with a message (and fails
// under CI=true, where it must run).
func tinyDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a tmpfs for the full-disk test: %v: %s", err, out)
		}
		t.Skipf("full-disk half skipped: mounting a tmpfs needs root (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file in dir until the disk has no byte left, and returns
// a function that removes it.
func fill(t *testing.T, dir string) func() {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	for _, chunk := range []int{1 << 16, 1 << 12, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				require.ErrorIs(t, err, syscall.ENOSPC)
				break
			}
		}
	}
	return func() { require.NoError(t, os.Remove(path)) }
}

// A database that cannot write — SQLite on a full disk, Postgres in
// read-only mode — fails /readyz with the reason, answers a write 503 with
// Retry-After and the reason, still serves reads, and keeps nothing of the
// write it refused.
func TestADatabaseThatCannotWriteFailsReadyzAndRefusesWritesWhole(t *testing.T) {
	t.Run(models.SQLite, func(t *testing.T) {
		disk := tinyDisk(t, 2<<20)
		db := dbtest.Open(t, "sqlite:"+filepath.Join(disk, "syncdesk.db"))
		b, _ := outageServer(t, db)
		a := b.api()
		require.Equal(t, http.StatusOK, a.send("PUT", "/api/v1/records/order/1", `{"title":"Order 1"}`).status)
		free := fill(t, disk)
		requireWritesRefused(t, b, a, db, "The database cannot write (disk full?)")

		free()
		var check string
		require.NoError(t, db.Raw("PRAGMA integrity_check").Scan(&check).Error)
		require.Equal(t, "ok", check, "the refused writes left the file whole")
		require.Equal(t, http.StatusOK, b.client().get("/readyz").status, "with room again, ready again")
		require.Equal(t, http.StatusOK, a.send("PUT", "/api/v1/records/order/2", `{"title":"Order 2"}`).status)
	})
	t.Run(models.Postgres, func(t *testing.T) {
		v := dbtest.PostgresURL(t)
		rw := dbtest.Open(t, v)
		u, err := url.Parse(v)
		require.NoError(t, err)
		q := u.Query()
		q.Set("default_transaction_read_only", "on") // every session of this handle is read-only
		u.RawQuery = q.Encode()
		ro, err := models.Open(u.String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = models.Close(ro) })

		b, _ := outageServer(t, rw)
		a := b.api()
		require.Equal(t, http.StatusOK, a.send("PUT", "/api/v1/records/order/1", `{"title":"Order 1"}`).status)
		readOnly, _ := outageServer(t, ro)
		readOnly.db = rw // counts are read through the writable handle
		requireWritesRefused(t, readOnly, &api{c: readOnly.client(), auth: a.auth}, rw,
			"The database is read-only, so nothing can be saved")
	})
}

// requireWritesRefused checks, on a database that cannot write, that order/1
// is still served, that a write is refused plainly and leaves nothing, and
// that /readyz says why.
func requireWritesRefused(t *testing.T, b *bundle, a *api, rw *gorm.DB, reason string) {
	t.Helper()
	count := func(table string) (n int64) {
		require.NoError(t, rw.Table(table).Count(&n).Error)
		return n
	}
	records, links, audit := count("records"), count("external_map"), count("audit_entries")

	requireJSONReason(t, b.client().get("/readyz"), "reason", reason)
	requireJSONReason(t, a.send("PUT", "/api/v1/records/order/2", `{"title":"Order 2"}`), "error", reason)
	requireJSONReason(t, a.send("PUT", "/api/v1/records/order/1", `{"title":"Order 1, changed"}`), "error", reason)
	got := a.send("GET", "/api/v1/records/order/1", "")
	require.Equal(t, http.StatusOK, got.status, "reads are still served: %s", got.body)
	require.Contains(t, got.body, `"title":"Order 1"`, "the refused change left the record as it was")

	require.Equal(t, records, count("records"), "no record half-written")
	require.Equal(t, links, count("external_map"), "no link half-written")
	require.Equal(t, audit, count("audit_entries"), "no audit entry for a write that did not happen")
	require.Equal(t, http.StatusNotFound, a.send("GET", "/api/v1/records/order/2", "").status)
}

// /readyz is open to anyone: a flood of probes proves one write a second,
// not one each, and a failed proof is not remembered.
func TestReadyzProvesAWriteAtMostOnceASecond(t *testing.T) {
	db := dbtest.SQLite(t)
	cdb, n := countedWrites(db)
	b := setup(t, cdb)
	for range 50 {
		require.Equal(t, http.StatusOK, b.client().get("/readyz").status)
	}
	require.LessOrEqual(t, n.Load(), int64(2), "50 probes within a second, at most two proofs")
}

// proofCounter counts the statements that prove a write on SQLite.
type proofCounter struct {
	logger.Interface
	n atomic.Int64
}

func (p *proofCounter) Trace(_ context.Context, _ time.Time, sql func() (string, int64), _ error) {
	if q, _ := sql(); strings.Contains(q, "user_version =") {
		p.n.Add(1)
	}
}

func countedWrites(db *gorm.DB) (*gorm.DB, *atomic.Int64) {
	p := &proofCounter{Interface: logger.Discard}
	return db.Session(&gorm.Session{Logger: p}), &p.n
}
