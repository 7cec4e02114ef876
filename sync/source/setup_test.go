package source

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// biz is a business database for a test: a database of its own on MariaDB,
// a schema of its own on Postgres.
type biz struct {
	driver, dsn string
	db          *sql.DB
}

// eachBiz runs fn on the two business databases × syncdesk's two, each
// pair fresh.
func eachBiz(t *testing.T, fn func(t *testing.T, db *gorm.DB, b biz)) {
	t.Helper()
	for _, driver := range []string{"mysql", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, db, newBiz(t, driver)) })
		})
	}
}

func newBiz(t testing.TB, driver string) biz {
	t.Helper()
	b := biz{driver: driver}
	if driver == "mysql" {
		b.dsn = dbtest.MySQL(t)
		cfg, err := mysql.ParseDSN(b.dsn)
		require.NoError(t, err)
		cfg.ParseTime = true
		conn, err := mysql.NewConnector(cfg)
		require.NoError(t, err)
		b.db = sql.OpenDB(conn)
	} else {
		b.dsn = dbtest.PostgresURL(t)
		var err error
		b.db, err = sql.Open("pgx", b.dsn)
		require.NoError(t, err)
	}
	b.db.SetMaxOpenConns(20)
	t.Cleanup(func() { _ = b.db.Close() })
	return b
}

var _ = stdlib.GetDefaultDriver // the "pgx" driver the business pools use

// createOutbox makes the outbox table README gives the application.
func (b biz) createOutbox(t testing.TB) { b.createOutboxNamed(t, "syncdesk_outbox") }

// createOutboxNamed makes an outbox table of README's shape named table,
// its ids counted from 1.
func (b biz) createOutboxNamed(t testing.TB, table string) {
	t.Helper()
	ddl := `CREATE TABLE ` + table + ` (
	  id BIGSERIAL PRIMARY KEY, type TEXT NOT NULL, local_id TEXT NOT NULL,
	  payload JSONB, op TEXT NOT NULL DEFAULT 'upsert', created_at TIMESTAMPTZ NOT NULL DEFAULT now())`
	if b.driver == "mysql" {
		ddl = `CREATE TABLE ` + table + ` (
		  id BIGINT AUTO_INCREMENT PRIMARY KEY, type VARCHAR(64) NOT NULL, local_id VARCHAR(128) NOT NULL,
		  payload JSON, op VARCHAR(16) NOT NULL DEFAULT 'upsert', created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))`
	}
	_, err := b.db.Exec(ddl)
	require.NoError(t, err)
}

// execer is a pool or a transaction of the business database.
type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// insert is the application writing one outbox row.
func (b biz) insert(ctx context.Context, q execer, typ, id, payload, op string) error {
	return b.insertInto(ctx, q, "syncdesk_outbox", typ, id, payload, op)
}

// insertInto writes one row to the outbox table named table.
func (b biz) insertInto(ctx context.Context, q execer, table, typ, id, payload, op string) error {
	stmt := "INSERT INTO " + table + " (type, local_id, payload, op) VALUES ($1, $2, $3, $4)"
	if b.driver == "mysql" {
		stmt = "INSERT INTO " + table + " (type, local_id, payload, op) VALUES (?, ?, ?, ?)"
	}
	var p any = payload
	if payload == "" {
		p = nil
	}
	_, err := q.ExecContext(ctx, stmt, typ, id, p, op)
	return err
}

// outboxSource is the configuration of a source on b's outbox table.
func (b biz) outboxSource() config.Source { return sourceConfig(b).Sources["shop"] }

// services route the type item to a service whose links are never sent here.
func services() map[string]config.Service {
	return map[string]config.Service{"crm": {BaseURL: "http://127.0.0.1:1", Objects: map[string]config.Object{
		"item": {Create: "POST /items", Update: "PUT /items/{external_id}"}}}}
}

// world is a test's syncdesk side: an engine on db and a log to read.
type world struct {
	db     *gorm.DB
	eng    *outbox.Engine
	clock  clock.Clock
	log    *syncBuffer
	logger *slog.Logger
}

func newWorld(t testing.TB, db *gorm.DB, clk clock.Clock) *world {
	t.Helper()
	if clk == nil {
		clk = clock.Real{}
	}
	cfg := config.Default()
	cfg.Services = services()
	require.NoError(t, cfg.Complete())
	var svcs []outbox.Service
	for name, svc := range cfg.Services {
		svcs = append(svcs, outbox.Service{Name: name, Config: svc})
	}
	w := &world{db: db, clock: clk, log: &syncBuffer{}}
	w.logger = slog.New(redact.NewHandler(slog.NewTextHandler(w.log, nil), redact.New(nil)))
	w.eng = outbox.New(db, svcs, clk, w.logger, outbox.Options{})
	return w
}

// source opens a source as a fresh instance would; the first of names
// (default shop) names it.
func (w *world) source(t testing.TB, cfg config.Source, names ...string) *Source {
	t.Helper()
	name := "shop"
	if len(names) > 0 {
		name = names[0]
	}
	s, err := New(context.Background(), name, cfg, w.db, w.eng, Options{Clock: w.clock, Log: w.logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// cursor reads the row of source shop.
func cursor(t testing.TB, db *gorm.DB) models.SourceCursor {
	t.Helper()
	return cursorOf(t, db, "shop")
}

// cursorOf reads a source's row.
func cursorOf(t testing.TB, db *gorm.DB, source string) models.SourceCursor {
	t.Helper()
	c, err := models.GetSourceCursor(db, source)
	require.NoError(t, err)
	return c
}

// records reads every live (not deleted) item's payload by local id.
func records(t testing.TB, db *gorm.DB) map[string]map[string]any {
	t.Helper()
	var rows []struct {
		LocalID string
		Payload string
	}
	require.NoError(t, db.Raw("SELECT local_id, payload FROM records WHERE local_type = 'item' AND deleted_at IS NULL").Scan(&rows).Error)
	out := map[string]map[string]any{}
	for _, r := range rows {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.Payload), &m))
		_, dup := out[r.LocalID]
		require.False(t, dup, "record %s stored twice", r.LocalID)
		out[r.LocalID] = m
	}
	return out
}

// drainUntil drains until the cursor reaches id or the time is up.
// tombstones is the local ids of the items deleted.
func tombstones(t testing.TB, db *gorm.DB) map[string]bool {
	t.Helper()
	var ids []string
	require.NoError(t, db.Raw("SELECT local_id FROM records WHERE local_type = 'item' AND deleted_at IS NOT NULL").Scan(&ids).Error)
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}

func drainUntil(t testing.TB, s *Source, db *gorm.DB, id int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for cursor(t, db).LastID < id {
		require.True(t, time.Now().Before(deadline), "the source did not reach id %d; cursor %+v", id, cursor(t, db))
		if err := s.Drain(context.Background()); err != nil {
			t.Logf("drain: %v", err)
		}
	}
}

// syncBuffer is a log buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func payload(n int) string { return fmt.Sprintf(`{"n": %d}`, n) }

// sourceConfig is a whole configuration with b's outbox as source shop.
func sourceConfig(b biz) config.Config { return sourceConfigDSN(b.driver, b.dsn) }

func sourceConfigDSN(driver, dsn string) config.Config {
	cfg := config.Default()
	cfg.Services = services()
	cfg.Sources = map[string]config.Source{"shop": {Driver: driver, DSN: dsn, Table: "syncdesk_outbox"}}
	if err := cfg.Complete(); err != nil {
		panic(err)
	}
	return cfg
}
