package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/migrations"
	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/models/discrepancy"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/seed"
	"github.com/syncdesk/syncdesk/sync/services"
	"github.com/syncdesk/syncdesk/views"
)

// The page benchmark answers the question: how long the dashboard's
// pages take on a big database (by default 100,000 links and 500,000
// attempts; the figure is for 1,000,000 and 5,000,000):
//
//	SYNCDESK_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	SYNCDESK_BENCH_LINKS=1000000 go test -run '^$' -bench Pages -benchtime 200x -timeout 0 ./web/
//
// Each database is seeded once per size and kept: SQLite in
// $TMPDIR/syncdesk-bench-N.db, Postgres in the schema bench_N. Delete them
// to seed again. A sub-benchmark per page reports the server time's p50 and
// p95 in milliseconds: the time spent in the handler (routing, session,
// queries, rendering, writing the body to the connection), measured by a
// wrapper around s.Handler(). ns/op is the client's round trip over
// loopback, for comparison.

const (
	envBenchLinks     = "SYNCDESK_BENCH_LINKS"
	defaultBenchLinks = 100_000
	attemptsPerLink   = 5
)

// benchNow is when the seeded time line ends; the served clock stands still there.
var benchNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// BenchmarkPages serves the real handler on a seeded database and requests
// each page, signed in, one request at a time.
func BenchmarkPages(b *testing.B) {
	n := defaultBenchLinks
	if v := os.Getenv(envBenchLinks); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			b.Fatalf("%s=%q: want a number of links, at least 1000", envBenchLinks, v)
		}
	}
	b.Run("db=sqlite", func(b *testing.B) { benchPages(b, seededSQLite(b, n)) })
	b.Run("db=postgres", func(b *testing.B) {
		if os.Getenv(dbtest.EnvPostgres) == "" {
			b.Skipf("set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to benchmark Postgres", dbtest.EnvPostgres)
		}
		benchPages(b, seededPostgres(b, n))
	})
}

func benchPages(b *testing.B, db *gorm.DB) {
	// The aggregates as the refresh-stats task keeps them (a database seeded
	// before a migration added one has it empty until then).
	for _, what := range []string{"the first time", "again, as the task does every 10 s"} {
		start := time.Now()
		if err := models.RefreshStats(db, benchNow); err != nil {
			b.Fatal(err)
		}
		b.Logf("refreshing the aggregates, %s: %s", what, time.Since(start).Round(time.Millisecond))
	}
	addRuns(b, db)
	timer, base, cookie := benchPagesServer(b, db)
	client := &http.Client{Timeout: time.Minute}
	for _, p := range benchPageURLs(b, db) {
		b.Run("page="+p.name, func(b *testing.B) {
			for i := range 5 { // warm the caches and the connection, and check the page is whole
				u := base + p.urls[i%len(p.urls)]
				if body := getWith(b, client, u, cookie, p.header); !strings.Contains(body, p.want) {
					b.Fatalf("GET %s: no %s in the page", u, p.want)
				}
			}
			timer.take()
			i := 0
			for b.Loop() {
				getWith(b, client, base+p.urls[i%len(p.urls)], cookie, p.header)
				i++
			}
			took := timer.take()
			b.ReportMetric(percentile(took, 50), "p50-ms")
			b.ReportMetric(percentile(took, 95), "p95-ms")
		})
	}
}

// timedHandler records how long each request spends in the handler.
type timedHandler struct {
	h    http.Handler
	mu   sync.Mutex
	took []time.Duration
}

func (t *timedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	t.h.ServeHTTP(w, r)
	d := time.Since(start)
	t.mu.Lock()
	t.took = append(t.took, d)
	t.mu.Unlock()
}

// take returns the times recorded since the last take.
func (t *timedHandler) take() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.took
	t.took = nil
	return out
}

// percentile is the p-th percentile of ds in milliseconds (nearest rank).
func percentile(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return float64(s[max(i-1, 0)]) / float64(time.Millisecond)
}

// getPage fetches a page, fails unless it is a 200, and returns its body.
func getPage(b testing.TB, client *http.Client, u string, cookie *http.Cookie) string {
	return getWith(b, client, u, cookie, nil)
}

// getWith fetches a page with headers (a live region's poll), as getPage.
func getWith(b testing.TB, client *http.Client, u string, cookie *http.Cookie, header http.Header) string {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.AddCookie(cookie)
	res, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: status %d, %v", u, res.StatusCode, err)
	}
	return string(body)
}

// benchConfig routes the seeded types to the seeded services.
func benchConfig() config.Config {
	cfg := config.Default()
	cfg.Services = map[string]config.Service{}
	for _, name := range seed.DefaultServices {
		svc := config.Service{Kind: "http", BaseURL: "http://127.0.0.1:9", Timeout: 10 * time.Second, Objects: map[string]config.Object{}}
		for _, typ := range seed.TypesOf(name) {
			svc.Objects[typ] = config.Object{Remote: typ, ExternalKey: "site_" + typ + "_{local_id}", KeyField: "external_key",
				IDField: "id", Create: "POST /" + typ + "s", Update: "PUT /" + typ + "s/{external_id}",
				Lookup: "GET /" + typ + "s?external_key={external_key}", List: "GET /" + typ + "s?cursor={cursor}"}
		}
		cfg.Services[name] = svc
	}
	return cfg
}

// benchPagesServer serves the handler, wired as serve wires it for pages, on a
// clock stopped at benchNow, and signs an operator in.
func benchPagesServer(b testing.TB, db *gorm.DB) (*timedHandler, string, *http.Cookie) {
	b.Helper()
	cfg := benchConfig()
	clk := clock.NewFake(benchNow)
	log := slog.New(slog.DiscardHandler)
	var recs []reconcile.Service
	for _, name := range cfg.ServiceNames() {
		svc := cfg.Services[name]
		recs = append(recs, reconcile.Service{Name: name, Config: svc, Conn: connector.NewHTTP(name, svc, redact.New(nil), nil)})
	}
	rec := reconcile.New(db, recs, clk, log, reconcile.Options{WorkerID: "bench"})
	b.Cleanup(rec.Close)
	s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Version: "bench", Log: log, Reconciler: rec,
		Pauser: services.NewPauser(db, cfg.ServiceNames(), clk, log)})
	if err != nil {
		b.Fatal(err)
	}
	timer := &timedHandler{h: s.Handler()}
	srv := httptest.NewServer(timer)
	b.Cleanup(srv.Close)

	const email = "bench@example.com"
	u, err := models.UserByEmail(db, email)
	if errors.Is(err, models.ErrNotFound) {
		u, err = models.CreateUser(db, email, models.RoleOperator, testPassword, benchNow)
	}
	if err != nil {
		b.Fatal(err)
	}
	token, err := models.CreateSession(db, u.ID, "127.0.0.1", "bench", benchNow, 24*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	return timer, srv.URL, &http.Cookie{Name: sessionCookie, Value: token}
}

type benchPage struct {
	name   string
	urls   []string    // requests cycle through them
	want   string      // what every one of them shows
	header http.Header // a poll's headers; nil for a page
}

// benchPageURLs picks what each page asks for: the deep page 90% of the
// way down, and links and searches spread over the whole table.
func benchPageURLs(b *testing.B, db *gorm.DB) []benchPage {
	b.Helper()
	var maxID int64
	if err := db.Model(&models.Link{}).Select("COALESCE(MAX(id), 0)").Scan(&maxID).Error; err != nil || maxID < 100 {
		b.Fatalf("seeded links: max id %d, %v", maxID, err)
	}
	var details, searches, statuses []string
	for j := range int64(64) {
		var l models.Link
		err := db.Where("id >= ? AND external_service = ? AND external_id <> ''", 1+(maxID-1)*j/64, "crm").Order("id").Take(&l).Error
		if err != nil {
			b.Fatalf("pick a crm link: %v", err)
		}
		details = append(details, "/links/"+strconv.FormatInt(l.ID, 10))
		statuses = append(statuses, "/links/"+strconv.FormatInt(l.ID, 10)+"/status")
		searches = append(searches, "/links?q="+url.QueryEscape(l.ExternalID))
	}
	return []benchPage{
		{"overview", []string{"/"}, `data-testid="reconcile-crm"`, nil},
		{"links", []string{"/links"}, `data-testid="links-next"`, nil},
		{"links-deep", []string{fmt.Sprintf("/links?before=%d", maxID-maxID*9/10)}, `data-testid="links-next"`, nil},
		{"links-failed", []string{"/links?status=failed"}, `data-status="failed"`, nil},
		{"links-search", searches, `data-testid="link-row-`, nil},
		{"link", details, `data-testid="attempts"`, nil},
		{"failed", []string{"/failed"}, `data-testid="failed-group-0"`, nil},
		{"services", []string{"/services"}, `data-testid="service-crm"`, nil},
		{"reconcile-runs", []string{"/reconcile"}, `data-testid="runs-next"`, nil},
		{"reconcile-run", []string{views.RunURL(seededRun(b, db, "crm"))}, `data-testid="disc-next"`, nil},
		// What the live pages poll, every 5 s while a tab shows them (a
		// link's status every 1 to 5 s, a running run's progress every
		// second): the whole region each time, as after a change, not the
		// 204 of an unchanged one.
		{"poll-overview", []string{"/"}, `data-testid="reconcile-crm"`, pollHeader},
		{"poll-failed", []string{"/failed"}, `data-testid="failed-group-0"`, pollHeader},
		{"poll-failed-group", []string{"/failed/group?g=" + url.QueryEscape(largestGroup(b, db))}, `data-testid="failed-links"`, pollHeader},
		{"poll-services", []string{"/services"}, `data-testid="service-crm"`, pollHeader},
		{"poll-links", []string{"/links"}, `data-testid="links-next"`, pollHeader},
		{"poll-events", []string{"/events"}, `data-testid="filter-service"`, pollHeader},
		{"poll-link-status", statuses, `data-testid="status-`, cellPoll},
		{"poll-run-progress", []string{views.RunURL(seededRun(b, db, "crm")) + "/progress"}, `data-testid="run-progress"`, cellPoll},
	}
}

// pollHeader is what htmx and static/js/live.js send with a live region's
// poll, from a page that has no version yet; cellPoll, with the poll of an
// element that asks for itself (a status cell, a progress bar).
var (
	pollHeader = http.Header{"Hx-Request": {"true"}, "Hx-Target": {"live"}}
	cellPoll   = http.Header{"Hx-Request": {"true"}}
)

// largestGroup is the failure group with the most links.
func largestGroup(b testing.TB, db *gorm.DB) string {
	b.Helper()
	groups, err := models.FailedGroups(db, false, 1)
	if err != nil || len(groups) == 0 {
		b.Fatalf("the seeded failure groups: %v, %v", groups, err)
	}
	return groups[0].ErrorGroup
}

// benchRuns is how many reconciliation runs the runs list benchmark sees:
// more than a page of them (the seed makes one per service).
const benchRuns = 60

// addRuns tops the seeded reconciliation runs up to benchRuns, each with a
// few discrepancies, so that the runs list has a full page to count.
func addRuns(b testing.TB, db *gorm.DB) {
	b.Helper()
	var n int64
	if err := db.Model(&models.ReconciliationRun{}).Count(&n).Error; err != nil {
		b.Fatal(err)
	}
	at := benchNow.Add(-2 * time.Hour)
	for i := n; i < benchRuns; i++ {
		r := models.ReconciliationRun{Service: "erp", TriggeredBy: "scheduler", StartedAt: at, HeartbeatAt: &at}
		if err := models.StartRun(db, &r); err != nil {
			b.Fatal(err)
		}
		var fs []models.Finding
		for j := range 7 {
			kind, status := discrepancy.NeverSynced, models.DiscrepancyFixed
			if j < 2 {
				kind, status = discrepancy.DuplicateRemote, models.DiscrepancyReported
			}
			fs = append(fs, models.Finding{RunID: r.ID, Kind: kind, Status: status, LocalType: "invoice",
				LocalID: fmt.Sprint(j), ExternalKey: fmt.Sprintf("site_invoice_%d", j), CreatedAt: at})
		}
		if err := models.InsertFindings(db, fs); err != nil {
			b.Fatal(err)
		}
		if err := models.FinishRun(db, r.ID, models.RunCompleted, "", at.Add(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
}

// seededRun is the id of the seed's reconciliation run of service.
func seededRun(b testing.TB, db *gorm.DB, service string) int64 {
	b.Helper()
	var id int64
	if err := db.Model(&models.ReconciliationRun{}).Where("service = ?", service).Select("MIN(id)").Scan(&id).Error; err != nil || id == 0 {
		b.Fatalf("the seeded run of %s: %d, %v", service, id, err)
	}
	return id
}

// seededSQLite opens the SQLite file of n links, seeding it the first time.
func seededSQLite(b *testing.B, n int) *gorm.DB {
	b.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("syncdesk-bench-%d.db", n))
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		partial := path + ".partial"
		for _, f := range []string{partial, partial + "-wal", partial + "-shm"} {
			_ = os.Remove(f)
		}
		seedOnce(b, "sqlite:"+partial, n)
		if err := os.Rename(partial, path); err != nil {
			b.Fatal(err)
		}
	}
	return dbtest.Open(b, "sqlite:"+path)
}

// seededPostgres opens the schema of n links, seeding it the first time.
func seededPostgres(b *testing.B, n int) *gorm.DB {
	b.Helper()
	base := os.Getenv(dbtest.EnvPostgres)
	admin, err := models.Open(base)
	if err != nil {
		b.Fatal(err)
	}
	defer models.Close(admin)
	schema := fmt.Sprintf("bench_%d", n)
	var found int64
	if err := admin.Raw("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", schema).Scan(&found).Error; err != nil {
		b.Fatal(err)
	}
	if found == 0 {
		partial := schema + "_partial"
		for _, q := range []string{`DROP SCHEMA IF EXISTS "` + partial + `" CASCADE`, `CREATE SCHEMA "` + partial + `"`} {
			if err := admin.Exec(q).Error; err != nil {
				b.Fatal(err)
			}
		}
		seedOnce(b, withSearchPath(b, base, partial), n)
		if err := admin.Exec(`ALTER SCHEMA "` + partial + `" RENAME TO "` + schema + `"`).Error; err != nil {
			b.Fatal(err)
		}
	}
	return dbtest.Open(b, withSearchPath(b, base, schema))
}

func withSearchPath(b *testing.B, base, schema string) string {
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// seedOnce migrates and fills the database at dsn with n links and
// attemptsPerLink times as many attempts, and closes it.
func seedOnce(b *testing.B, dsn string, n int) {
	b.Helper()
	db, err := models.Open(dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer models.Close(db)
	if _, err := migrations.Apply(db); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := seed.Fill(context.Background(), db, seed.Options{Links: n, Attempts: attemptsPerLink * n, Now: benchNow}); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d links and %d attempts on %s in %s", n, attemptsPerLink*n, models.Dialect(db), time.Since(start).Round(time.Second))
	if models.Dialect(db) == models.SQLite {
		// Fold the WAL into the file before it is renamed.
		if err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error; err != nil {
			b.Fatal(err)
		}
	}
}

// TestPagesOnSeededDatabase: every page the benchmark times answers on a
// seeded database, with what it should show.
func TestPagesOnSeededDatabase(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, seed.Fill(context.Background(), db, seed.Options{Links: 2000, Attempts: 10000, Now: benchNow}))
		addRuns(t, db)
		_, base, cookie := benchPagesServer(t, db)
		client := &http.Client{Timeout: time.Minute}
		var crm models.Link
		require.NoError(t, db.Where("external_service = ? AND external_id <> ''", "crm").Order("id DESC").Take(&crm).Error)
		for path, want := range map[string]string{
			"/":                                   `href="/reconcile/1"`,
			"/links":                              `data-testid="links-next"`,
			"/links?before=200":                   `data-testid="link-row-199"`,
			"/links?status=failed":                `data-testid="links-table"`,
			"/links?q=" + crm.ExternalID:          `data-testid="link-row-` + itoa(crm.ID) + `"`,
			"/links/" + itoa(crm.ID):              `data-testid="attempts"`,
			"/failed":                             `data-testid="failed-groups"`,
			"/services":                           `data-testid="service-crm"`,
			"/reconcile":                          `data-testid="runs-next"`,
			views.RunURL(seededRun(t, db, "crm")): `Reconciliation of crm`,
		} {
			require.Contains(t, getPage(t, client, base+path, cookie), want, "GET %s", path)
		}
	})
}
