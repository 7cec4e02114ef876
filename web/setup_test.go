package web

import (
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/argon2"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

// bundle is what a web test needs: a served syncdesk on a real database.
type bundle struct {
	t     *testing.T
	db    *gorm.DB
	clock *clock.Fake
	srv   *httptest.Server
	cfg   config.Config
	eng   *outbox.Engine
	crm   *sandbox.Provider
	web   *Server
}

const testPassword = "correct-horse-battery"

func setup(t *testing.T, db *gorm.DB) *bundle {
	t.Helper()
	cfg := config.Default()
	cfg.TrustedProxies = []string{"127.0.0.0/8"} // tests pick a client IP with X-Forwarded-For
	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	crm := sandbox.NewCRM(sandbox.Options{})
	crmSrv := httptest.NewServer(crm)
	t.Cleanup(crmSrv.Close)
	svc := config.Service{Kind: "http", BaseURL: crmSrv.URL, Timeout: 5 * time.Second,
		Retry: config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute},
		Objects: map[string]config.Object{"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key",
			IDField: "id", Create: "POST /deals", Update: "PUT /deals/{external_id}", Lookup: "GET /deals?external_key={external_key}",
			Delete: "DELETE /deals/{external_id}"}}}
	cfg.Services = map[string]config.Service{"crm": svc}
	log := slog.New(slog.DiscardHandler)
	eng := outbox.New(db, []outbox.Service{{Name: "crm", Config: svc, Conn: connector.NewHTTP("crm", svc, redact.New(nil), nil)}},
		clk, log, outbox.Options{Concurrency: 4})
	rc, err := inbox.New(db, cfg.Services, clk, log, redact.New(nil))
	require.NoError(t, err)
	s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Version: "test", Log: log, Outbox: eng, Inbox: rc})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &bundle{t: t, db: db, clock: clk, srv: srv, cfg: cfg, eng: eng, crm: crm, web: s}
}

// loadConfig loads a configuration file as syncdesk does at start, presets
// expanded and every setting checked.
func loadConfig(t testing.TB, yaml string) config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "syncdesk.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	cfg, err := config.Load(path, config.Overrides{})
	require.NoError(t, err)
	return cfg
}

// setupSQLite serves syncdesk on a fresh SQLite file.
func setupSQLite(t *testing.T) *bundle { return setup(t, dbtest.SQLite(t)) }

// user creates a user with testPassword, stored as testPasswordHash.
func (b *bundle) user(email string, role models.Role) *models.User {
	b.t.Helper()
	email, err := models.NormalizeEmail(email)
	require.NoError(b.t, err)
	now := b.clock.Now()
	u := &models.User{Email: email, Name: strings.SplitN(email, "@", 2)[0], Role: role, PasswordHash: testPasswordHash,
		CreatedAt: now, UpdatedAt: now}
	require.NoError(b.t, b.db.Create(u).Error)
	return u
}

// testPasswordHash is testPassword's argon2id hash at argon2's lowest cost
// (64 KiB, one pass). A sign-in reads the cost from the stored hash, so the
// tests' users sign in through the product's own check. At the product's
// cost (models.HashPassword, which models' tests hold to OWASP's minimum)
// a hash or a check takes about a third of a second under -race, and the
// tests here create and sign in users by the hundred. Sign-ins of unknown
// accounts still pay the product's cost, and the tests of the sign-in
// gate, which need it, create their users with models.CreateUser.
var testPasswordHash = func() string {
	salt := []byte("syncdesk-tests..")
	key := argon2.IDKey([]byte(testPassword), salt, 1, 64, 1, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=64,t=1,p=1$%s$%s", argon2.Version, b64.EncodeToString(salt), b64.EncodeToString(key))
}()

// client is a browser-like client: a cookie jar, no redirect following.
type client struct {
	b    *bundle
	http *http.Client
	ip   string
}

func (b *bundle) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{b: b, ip: "198.51.100.7", http: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		Transport:     openAPIChecked{t: b.t, base: http.DefaultTransport}, // every /api/ call checked against the document
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (c *client) do(method, path string, form url.Values, header http.Header) response {
	c.b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.b.srv.URL+path, body)
	require.NoError(c.b.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("X-Forwarded-For", c.ip)
	res, err := c.http.Do(req)
	require.NoError(c.b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(c.b.t, err)
	return response{status: res.StatusCode, header: res.Header, body: string(raw)}
}

func (c *client) get(path string) response { return c.do(http.MethodGet, path, nil, nil) }

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// csrf returns the token a page's forms carry.
func (c *client) csrf(path string) string {
	c.b.t.Helper()
	r := c.get(path)
	m := csrfField.FindStringSubmatch(r.body)
	require.NotNil(c.b.t, m, "no CSRF field on %s (status %d)", path, r.status)
	return m[1]
}

// post submits a form with the CSRF token of the page it came from.
func (c *client) post(from, path string, form url.Values) response {
	c.b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", c.csrf(from))
	return c.do(http.MethodPost, path, form, nil)
}

func (c *client) login(email, password string) response {
	c.b.t.Helper()
	return c.post("/login", "/login", url.Values{"email": {email}, "password": {password}})
}

// signedIn returns a client signed in as a new user with role.
func (b *bundle) signedIn(email string, role models.Role) *client {
	b.t.Helper()
	b.user(email, role)
	c := b.client()
	r := c.login(email, testPassword)
	require.Equal(b.t, http.StatusSeeOther, r.status, "sign-in as %s: %s", email, r.body)
	return c
}

func (c *client) cookie(name string) *http.Cookie {
	u, _ := url.Parse(c.b.srv.URL)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == name {
			return ck
		}
	}
	return nil
}

func (b *bundle) auditCount(action, outcome string) int64 {
	b.t.Helper()
	var n int64
	require.NoError(b.t, b.db.Model(&models.AuditEntry{}).Where("action = ? AND outcome = ?", action, outcome).Count(&n).Error)
	return n
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
