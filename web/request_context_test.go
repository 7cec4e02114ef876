package web

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/action"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/schedule"
)

// requestMark is the test's mark on a request's context: which request it is.
type requestMark struct{}

// leaveMark carries the function that cancels a request's context, as its
// client going away would.
type leaveMark struct{}

// statement is one SQL statement the web package ran, as statementLog saw it.
type statement struct {
	request  string // the mark of the request whose context it ran under; "" when none
	detached bool   // its context cannot be cancelled (context.WithoutCancel, or none at all)
	caller   string // the web function that made it, e.g. "listLinks" (a closure counts as its function)
	where    string // that function's file and line
	sql      string
	err      error
}

// statementLog records every statement run through a session of the
// database, with what its context says.
type statementLog struct {
	logger.Interface
	mu  sync.Mutex
	all []statement
}

func (l *statementLog) Trace(ctx context.Context, _ time.Time, fc func() (string, int64), err error) {
	sql, _ := fc()
	mark, _ := ctx.Value(requestMark{}).(string)
	st := statement{request: mark, detached: ctx.Done() == nil, sql: sql, err: err}
	st.caller, st.where = webCaller()
	l.mu.Lock()
	l.all = append(l.all, st)
	l.mu.Unlock()
}

func (l *statementLog) statements() []statement {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// webPackage prefixes the names of the web package's functions.
const webPackage = "github.com/syncdesk/syncdesk/web."

// webCaller names the innermost function of the web package (not of its
// tests) on the stack, and its file and line. A method is named without its
// receiver and a closure as the function it is in: "loadSession" for
// "(*Server).loadSession-fm.(*Server).loadSession.func1".
func webCaller() (string, string) {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, webPackage) && !strings.HasSuffix(f.File, "_test.go") {
			name := strings.TrimPrefix(f.Function, webPackage)
			if i := strings.LastIndex(name, "(*Server)."); i >= 0 {
				name = name[i+len("(*Server)."):]
			}
			name, _, _ = strings.Cut(name, ".")
			return name, filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
		}
		if !more {
			return "", ""
		}
	}
}

// leaveBefore makes the client of a request go away just before the first
// statement that the web function fn makes for it, by cancelling the
// context the request's leaveMark carries: a GORM callback, as a statement
// is about to run. Other statements are left alone. GORM's callbacks are
// not to be registered while the database is in use: call it first.
func leaveBefore(t *testing.T, db *gorm.DB, fn string) {
	t.Helper()
	hook := func(tx *gorm.DB) {
		leave, ok := tx.Statement.Context.Value(leaveMark{}).(context.CancelFunc)
		if caller, _ := webCaller(); ok && caller == fn {
			leave()
		}
	}
	cb := db.Callback()
	require.NoError(t, errors.Join(
		cb.Create().Before("gorm:create").Register("test:leave", hook),
		cb.Query().Before("gorm:query").Register("test:leave", hook),
		cb.Update().Before("gorm:update").Register("test:leave", hook),
		cb.Delete().Before("gorm:delete").Register("test:leave", hook),
		cb.Row().Before("gorm:row").Register("test:leave", hook),
		cb.Raw().Before("gorm:raw").Register("test:leave", hook)))
}

// marking serves h with each request's context marked with a mark of its
// own, and keeps the marks it handed out.
type marking struct {
	h     http.Handler
	n     atomic.Int64
	mu    sync.Mutex
	marks []string
}

func (m *marking) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mark := fmt.Sprintf("#%d %s %s", m.n.Add(1), r.Method, r.URL.RequestURI())
	m.mu.Lock()
	m.marks = append(m.marks, mark)
	m.mu.Unlock()
	m.h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestMark{}, mark)))
}

func (m *marking) served() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.marks)
}

// recordedServer serves syncdesk with every page's feature in place (a
// reconciler, a scheduler, a service that takes webhooks) and the web
// package's own database a session whose statements are recorded. The
// engines get the database without the recorder: what is checked is what
// the web package queries itself.
func recordedServer(t *testing.T, db *gorm.DB) (*bundle, *statementLog, *marking) {
	t.Helper()
	b, rec := reconcileServer(t, db, 100)
	b.cfg.Services = maps.Clone(b.cfg.Services)
	b.cfg.Services["stripe"] = config.Service{Webhook: &config.Webhook{Scheme: "stripe", Secrets: []string{stripeSecret}}}
	log := slog.New(slog.DiscardHandler)
	in, err := inbox.New(db, b.cfg.Services, b.clock, log, redact.New(nil))
	require.NoError(t, err)
	sched, err := schedule.New([]schedule.Task{{Name: reconcileTask, Every: time.Hour, Run: rec.RunDue}},
		schedule.Options{DB: db, Instance: "web-1", Log: log})
	require.NoError(t, err)
	sched.Start()
	t.Cleanup(func() { _ = sched.Stop() })
	stmts := &statementLog{Interface: logger.Discard}
	s, err := New(Deps{DB: db.Session(&gorm.Session{Logger: stmts}), Config: b.cfg, Clock: b.clock, Version: "test", Log: log,
		Outbox: b.eng, Inbox: in, Scheduler: sched, Reconciler: rec})
	require.NoError(t, err)
	m := &marking{h: s.Handler()}
	b.srv.Close()
	b.srv = httptest.NewServer(m)
	t.Cleanup(b.srv.Close)
	b.web = s
	return b, stmts, m
}

// detachedWrites are the web functions whose writes are detached from the
// request on purpose, and none other's: each must land even when the
// client has gone away (see each one's comment).
var detachedWrites = []string{"audit", "auditLogin", "logout", "recountFailed"}

// Every query a request makes runs under the request's context, so that a
// client that goes away cancels it; the writes that must outlive the
// client are detached (context.WithoutCancel keeps the request's values)
// and no others. Every page is visited, the API's reads and a few actions.
func TestEveryQueryRunsUnderItsRequestsContext(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b, stmts, m := recordedServer(t, db)
		now := b.clock.Now()
		b.seedLinks(6)
		waiting := b.link("order", "200", "crm", models.StatusRetry)
		b.orphanRecord(100)
		seedEvent(t, db, "stripe", "evt_1", "charge.succeeded", models.EventIgnored, now)
		run := seedRun(t, db, now, 3)
		groups, err := models.FailedGroups(db, false, 0)
		require.NoError(t, err)
		require.NotEmpty(t, groups)
		token, _, err := models.CreateAPIToken(db, "shop", "test", now)
		require.NoError(t, err)

		require.Equal(t, http.StatusUnauthorized, b.client().login("nobody@example.com", "wrong password").status)
		admin := b.signedIn("root@example.com", models.RoleAdmin)
		b.user("vic@example.com", models.RoleViewer)
		runURL := "/reconcile/" + itoa(run)
		for _, path := range []string{"/", "/links", "/links/1", "/links/1/status", "/records/order/100",
			"/failed", "/failed/group?g=" + url.QueryEscape(groups[0].ErrorGroup), "/events", "/events/stripe/evt_1",
			"/services", "/reconcile", runURL, runURL + "/progress", runURL + "/discrepancies.csv",
			"/schedules", "/audit", "/users", "/readyz"} {
			r := admin.get(path)
			require.Equal(t, http.StatusOK, r.status, "GET %s: %s", path, r.body)
		}
		bearer := http.Header{"Authorization": {"Bearer " + token}}
		for _, path := range []string{"/api/v1/links", "/api/v1/records/order/100"} {
			r := admin.do(http.MethodGet, path, nil, bearer)
			require.Equal(t, http.StatusOK, r.status, "GET %s: %s", path, r.body)
		}
		for _, p := range []struct {
			path string
			form url.Values
			want int
		}{
			{"/links/" + itoa(waiting) + "/fail", url.Values{"reason": {"test"}}, http.StatusSeeOther},
			{"/failed/retry", url.Values{"group": {groups[0].ErrorGroup}}, http.StatusOK},
			{"/failed/retry/confirm", url.Values{"id": {"3"}}, http.StatusSeeOther},
			{"/users", url.Values{"email": {"new@example.com"}, "role": {"viewer"}}, http.StatusOK},
			{"/users/role", url.Values{"email": {"vic@example.com"}, "role": {"operator"}}, http.StatusSeeOther},
			{"/tokens", url.Values{"name": {"other"}}, http.StatusOK},
			{"/reconcile/start", url.Values{"service": {"crm"}, "dry_run": {"1"}}, http.StatusSeeOther},
			{"/schedules/" + reconcileTask + "/run", nil, http.StatusSeeOther},
			{"/logout", nil, http.StatusSeeOther},
		} {
			r := admin.post("/users", p.path, p.form)
			require.Equal(t, p.want, r.status, "POST %s: %s", p.path, r.body)
		}

		all := stmts.statements()
		byRequest := map[string]int{}
		var outside, wrongDetach []string
		for _, st := range all {
			byRequest[st.request]++
			detach := slices.Contains(detachedWrites, st.caller)
			switch {
			case st.request == "":
				outside = append(outside, fmt.Sprintf("%s at %s: %s", st.caller, st.where, st.sql))
			case st.detached != detach:
				wrongDetach = append(wrongDetach, fmt.Sprintf("%s at %s (detached %v): %s", st.caller, st.where, st.detached, st.sql))
			}
		}
		require.Empty(t, outside, "%d statements ran without their request's context, first:\n%s", len(outside), firstLines(outside))
		require.Empty(t, wrongDetach, "%d statements detached from their request, or not, against detachedWrites, first:\n%s",
			len(wrongDetach), firstLines(wrongDetach))
		for _, mark := range m.served() {
			if strings.Contains(mark, " GET /login") {
				continue // the sign-in form, before signing in: no query
			}
			require.Positive(t, byRequest[mark], "request %s ran no statement through the recorded session", mark)
		}
		for _, fn := range detachedWrites {
			require.True(t, slices.ContainsFunc(all, func(st statement) bool { return st.caller == fn }),
				"no statement from %s: the check of its detachment saw nothing", fn)
		}
	})
}

// firstLines joins the first few of lines, one a line.
func firstLines(lines []string) string {
	return strings.Join(lines[:min(len(lines), 8)], "\n")
}

// serveLeaving serves req, marked, under a context its leaveMark can
// cancel, and returns the answer and the statements it ran.
func serveLeaving(t *testing.T, b *bundle, stmts *statementLog, req *http.Request) (*httptest.ResponseRecorder, []statement) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mark := "leaving " + req.Method + " " + req.URL.RequestURI()
	ctx = context.WithValue(context.WithValue(ctx, requestMark{}, mark), leaveMark{}, cancel)
	req.Header.Set("X-Forwarded-For", "198.51.100.9")
	rec := httptest.NewRecorder()
	b.web.Handler().ServeHTTP(rec, req.WithContext(ctx))
	var ran []statement
	for _, st := range stmts.statements() {
		if st.request == mark {
			ran = append(ran, st)
		}
	}
	return rec, ran
}

// withCookies is a request carrying the client's cookies.
func withCookies(c *client, method, path string, form url.Values) *http.Request {
	var req *http.Request
	if form == nil {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	u, _ := url.Parse(c.b.srv.URL)
	for _, ck := range c.http.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	return req
}

// A client that goes away as its page is about to query cancels the
// query: it ends in context.Canceled instead of running, nothing runs
// after it, and the request is answered 499, not logged as a failure.
func TestAQueryOfAClientThatWentAwayIsCancelled(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		leaveBefore(t, db, "listLinks")
		b, stmts, _ := recordedServer(t, db)
		b.seedLinks(3)
		viewer := b.signedIn("vic@example.com", models.RoleViewer)

		rec, ran := serveLeaving(t, b, stmts, withCookies(viewer, http.MethodGet, "/links", nil))
		require.Equal(t, statusClientClosed, rec.Code, rec.Body.String())
		require.NotEmpty(t, ran)
		last := ran[len(ran)-1]
		require.Equal(t, "listLinks", last.caller, "the page's first query is the last statement: %v", ran)
		require.ErrorIs(t, last.err, context.Canceled, "the page's query ran although its client had gone away")
		for _, st := range ran[:len(ran)-1] {
			require.NoError(t, st.err, "%s before the client left", st.caller)
		}

		require.Equal(t, http.StatusOK, viewer.get("/links").status, "the same page, its client staying, is served")
	})
}

// A sign-out whose client goes away at once still ends the session: the
// cookie may still be in the browser, and must be worth nothing.
func TestASignOutEndsTheSessionWhenItsClientGoesAway(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		leaveBefore(t, db, "logout")
		b, stmts, _ := recordedServer(t, db)
		viewer := b.signedIn("vic@example.com", models.RoleViewer)
		form := url.Values{"_csrf": {viewer.csrf("/")}}

		rec, _ := serveLeaving(t, b, stmts, withCookies(viewer, http.MethodPost, "/logout", form))
		require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
		r := viewer.get("/links")
		require.Equal(t, http.StatusSeeOther, r.status, "the session outlived a sign-out whose client went away")
		require.Equal(t, int64(1), b.auditCount(action.Logout, models.OutcomeSuccess))
	})
}

// A failed sign-in whose client hung up while its password was checked is
// still counted: the throttle counts failures from the audit log, and a
// guesser who never waits for the answer must not escape it.
func TestAFailedSignInIsCountedWhenItsClientHangsUp(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		leaveBefore(t, db, "auditLogin")
		b, stmts, _ := recordedServer(t, db)
		b.user("vic@example.com", models.RoleViewer)
		guesser := b.client()
		form := url.Values{"_csrf": {guesser.csrf("/login")}, "email": {"vic@example.com"}, "password": {"not the password"}}

		rec, ran := serveLeaving(t, b, stmts, withCookies(guesser, http.MethodPost, "/login", form))
		require.Equal(t, http.StatusUnauthorized, rec.Code, rec.Body.String())
		require.True(t, slices.ContainsFunc(ran, func(st statement) bool { return st.caller == "auditLogin" && st.err == nil }),
			"the failure's audit entry was not written: %v", ran)
		require.Equal(t, int64(1), b.auditCount(action.Login, models.OutcomeFailure))
	})
}

// The web package reaches its database only through requestDB and
// detachedDB: a handler that used s.db itself would query under no
// request's context. Read from the source, so that a new handler is held
// to it before any test visits it.
func TestTheWebPackageQueriesOnlyThroughTheRequestsContext(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, "_templ.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name == "requestDB" || fn.Name.Name == "detachedDB" {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "db" {
					if _, ok := sel.X.(*ast.Ident); ok {
						found = append(found, fset.Position(sel.Pos()).String())
					}
				}
				return true
			})
		}
	}
	require.Greater(t, len(files), 10, "the check must read the package's files")
	require.Empty(t, found, "the database used without the request's context (use requestDB, or detachedDB with a reason) at:\n%s",
		strings.Join(found, "\n"))
}

// On Postgres a write waiting on a lock stops waiting when its client goes
// away: the request answers at once, the server stops the statement and
// nothing of the change lands. (On
// SQLite a write waits for the one writer in SQLite's busy handler, which
// a cancelled context does not interrupt; the statements after it are
// cancelled there, as TestAQueryOfAClientThatWentAwayIsCancelled shows.)
func TestAWriteWaitingOnALockStopsWhenItsClientGoesAway(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	b, _, _ := recordedServer(t, db)
	admin := b.signedIn("root@example.com", models.RoleAdmin)
	b.user("vic@example.com", models.RoleViewer)
	form := url.Values{"_csrf": {admin.csrf("/users")}, "email": {"vic@example.com"}, "role": {"admin"}}

	holder := db.Begin()
	require.NoError(t, holder.Error)
	t.Cleanup(func() { holder.Rollback() })
	var holderPID int64
	require.NoError(t, holder.Raw("SELECT pg_backend_pid()").Scan(&holderPID).Error)
	require.NoError(t, holder.Exec("SELECT id FROM users WHERE email = ? FOR UPDATE", "vic@example.com").Error)
	waiting := func() int64 {
		var n int64
		require.NoError(t, db.Raw("SELECT count(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", holderPID).Scan(&n).Error)
		return n
	}

	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		b.web.Handler().ServeHTTP(rec, withCookies(admin, http.MethodPost, "/users/role", form).WithContext(ctx))
		answered <- rec
	}()
	require.Eventually(t, func() bool { return waiting() == 1 }, 10*time.Second, 10*time.Millisecond,
		"the role change never waited on the held row")
	leave()
	select {
	case rec := <-answered:
		require.Equal(t, statusClientClosed, rec.Code, rec.Body.String())
	case <-time.After(5 * time.Second):
		holder.Rollback()
		<-answered
		t.Fatal("the role change went on waiting after its client had gone away")
	}
	// pgx gives up the connection and asks the server to cancel what it runs.
	require.Eventually(t, func() bool { return waiting() == 0 }, 2*time.Second, 5*time.Millisecond,
		"the server still runs the statement of a request whose client went away")
	require.NoError(t, holder.Rollback().Error)
	u, err := models.UserByEmail(db, "vic@example.com")
	require.NoError(t, err)
	require.Equal(t, models.RoleViewer, u.Role, "the cancelled change must not land")
}
