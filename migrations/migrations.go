// Package migrations holds the versioned SQL schema, one folder per dialect, and
// applies it in order, each file in its own transaction.
package migrations

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// ErrTooNew means the database was migrated by a newer syncdesk than this binary.
var ErrTooNew = errors.New("database schema is newer than this binary")

// Migration is one versioned SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// For returns the migrations of a dialect ("sqlite" or "postgres") in version order.
func For(dialect string) ([]Migration, error) {
	entries, err := fs.ReadDir(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations for %q: %w", dialect, err)
	}
	var out []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration file %s: want NNNN_name.sql", e.Name())
		}
		body, err := files.ReadFile(path.Join(dialect, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := range out {
		if out[i].Version != i+1 {
			return nil, fmt.Errorf("migrations for %s: version %d missing", dialect, i+1)
		}
	}
	return out, nil
}

// Latest is the newest version this binary knows for a dialect.
func Latest(dialect string) (int, error) {
	ms, err := For(dialect)
	if err != nil {
		return 0, err
	}
	return len(ms), nil
}

// versionTable records each applied migration.
const versionTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TEXT NOT NULL
)`

// lockClass is the first half of the advisory lock that serialises the
// migrations of one schema across instances; the second half is a hash of
// the schema's name. Advisory locks are per database already, and a key of
// its own per schema lets schemas on one database (each test has one)
// migrate side by side instead of queueing behind each other.
const lockClass = 7265_1001

// lockSQL takes the schema's migration lock until the transaction ends. An
// empty search path (no schema selected) hashes as "": nothing can be
// created there anyway, and a NULL key would take no lock at all.
const lockSQL = "SELECT pg_advisory_xact_lock(?, hashtext(coalesce(current_schema(), '')))"

// Apply brings the database up to the newest version and returns how many
// migrations it applied. Re-running is a no-op. A database whose version is
// newer than the binary's is refused with ErrTooNew.
func Apply(db *gorm.DB) (int, error) {
	dialect := db.Dialector.Name()
	ms, err := For(dialect)
	if err != nil {
		return 0, err
	}
	if err := createVersionTable(db, dialect); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	if _, err := check(db, len(ms)); err != nil {
		return 0, err
	}
	applied := 0
	for _, m := range ms {
		done, err := applyOne(db, dialect, m)
		if err != nil {
			return applied, fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if done {
			applied++
		}
	}
	return applied, nil
}

// lock serialises, on Postgres, the transaction tx with every other
// instance's migrations of the same schema. SQLite's transactions begin
// IMMEDIATE, holding the database's write lock already.
func lock(tx *gorm.DB, dialect string) error {
	if dialect != "postgres" {
		return nil
	}
	return tx.Exec(lockSQL, lockClass).Error
}

// createVersionTable creates schema_migrations under the lock. Two
// instances running CREATE TABLE IF NOT EXISTS at once on an empty Postgres
// both find no table and both create one, and the second fails on the
// catalog's unique index (pg_type_typname_nsp_index): IF NOT EXISTS is no
// guard against a concurrent create.
func createVersionTable(db *gorm.DB, dialect string) error {
	return db.Transaction(func(tx *gorm.DB) error {
		if err := lock(tx, dialect); err != nil {
			return err
		}
		return tx.Exec(versionTable).Error
	})
}

// applyOne runs one migration in a transaction unless it is already
// recorded. The transaction first takes the lock, so two instances starting
// together apply each file once.
func applyOne(db *gorm.DB, dialect string, m Migration) (bool, error) {
	applied := false
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := lock(tx, dialect); err != nil {
			return err
		}
		var n int64
		if err := tx.Raw("SELECT COUNT(*) FROM schema_migrations WHERE version = ?", m.Version).Scan(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if err := tx.Exec(m.SQL).Error; err != nil {
			return err
		}
		applied = true
		return tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
			m.Version, m.Name, time.Now().UTC().Format(time.RFC3339)).Error
	})
	return applied, err
}

// Current reports the database's version and whether it matches the binary's
// newest; it returns ErrTooNew for a database ahead of the binary.
func Current(db *gorm.DB) (version int, upToDate bool, err error) {
	latest, err := Latest(db.Dialector.Name())
	if err != nil {
		return 0, false, err
	}
	v, err := check(db, latest)
	return v, v == latest, err
}

func check(db *gorm.DB, latest int) (int, error) {
	var v *int
	if err := db.Raw("SELECT MAX(version) FROM schema_migrations").Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if v == nil {
		return 0, nil
	}
	if *v > latest {
		return *v, fmt.Errorf("%w: the database is at version %d, this syncdesk knows up to %d; run a newer syncdesk", ErrTooNew, *v, latest)
	}
	return *v, nil
}
