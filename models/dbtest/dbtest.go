// Package dbtest opens fresh, migrated databases for tests: SQLite in a temp
// dir always, and PostgreSQL when SYNCDESK_TEST_POSTGRES names a server, each
// test in a schema of its own so that tests can run in parallel.
package dbtest

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/migrations"
	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dsn"
)

// EnvPostgres names the environment variable holding the test server's URL.
const EnvPostgres = "SYNCDESK_TEST_POSTGRES"

// Each runs fn as a subtest once per database: "sqlite", then "postgres".
// Without SYNCDESK_TEST_POSTGRES the Postgres half is skipped with a message
// (and fails under CI=true, where the database must be there).
func Each(t *testing.T, fn func(t *testing.T, db *gorm.DB)) {
	t.Helper()
	t.Run(models.SQLite, func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run(models.Postgres, func(t *testing.T) { fn(t, Postgres(t)) })
}

// SQLite returns a migrated database in a fresh file under t.TempDir().
func SQLite(t testing.TB) *gorm.DB {
	t.Helper()
	return open(t, "sqlite:"+filepath.Join(t.TempDir(), "test.db"))
}

// SQLitePath returns the --db value of a fresh, migrated SQLite file.
func SQLitePath(t testing.TB) string {
	t.Helper()
	v := "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	db := open(t, v)
	_ = models.Close(db)
	return v
}

// Postgres returns a migrated database in a new schema that is dropped when
// the test ends, or skips the test when no server is configured.
func Postgres(t testing.TB) *gorm.DB {
	t.Helper()
	return open(t, PostgresURL(t))
}

// PostgresURL creates an empty schema for the test and returns a URL whose
// connections use it. It skips the test when no server is configured.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := server(t, EnvPostgres, "Postgres", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	admin, err := models.Open(base)
	if err != nil {
		t.Fatalf("connect to test Postgres: %v", err)
	}
	schema := "t_" + strings.ToLower(models.NewSecret(9))
	schema = strings.NewReplacer("-", "_").Replace(schema)
	if err := admin.Exec(fmt.Sprintf(`CREATE SCHEMA "%s"`, schema)).Error; err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		admin.Exec(fmt.Sprintf(`DROP SCHEMA "%s" CASCADE`, schema))
		_ = models.Close(admin)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvPostgres, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// server reads the address of a test server from the environment variable
// env, and skips the test without it — or fails it under CI=true, where
// every test must run.
func server(t testing.TB, env, name, example string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set under CI: the %s tests must run", env, name)
		}
		t.Skipf("%s half skipped: set %s (e.g. %s) to run it", name, env, example)
	}
	return v
}

// Open opens (and migrates) the database at a --db value, closed when the
// test ends: a second handle on a PostgresURL acts as a second instance.
func Open(t testing.TB, v string) *gorm.DB { t.Helper(); return open(t, v) }

func open(t testing.TB, v string) *gorm.DB {
	t.Helper()
	db, err := models.Open(v)
	if err != nil {
		t.Fatalf("open %s: %v", dsn.Redact(v), err)
	}
	t.Cleanup(func() { _ = models.Close(db) })
	if _, err := migrations.Apply(db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

// EnvMySQL names the environment variable holding the test MySQL or
// MariaDB server's DSN (e.g. root@tcp(127.0.0.1:3306)/test), for tests of
// sources that read a business database.
const EnvMySQL = "SYNCDESK_TEST_MYSQL"

// MySQL creates an empty database for the test on the MySQL/MariaDB server
// SYNCDESK_TEST_MYSQL names, dropped when the test ends, and returns its
// DSN. Without the variable it skips the test (and fails under CI=true).
func MySQL(t testing.TB) string {
	t.Helper()
	base := server(t, EnvMySQL, "MySQL", "root@tcp(127.0.0.1:3306)/test")
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvMySQL, err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("connect to test MySQL: %v", err)
	}
	name := "t_" + strings.ToLower(strings.NewReplacer("-", "_").Replace(models.NewSecret(9)))
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP DATABASE " + name)
		_ = admin.Close()
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}
