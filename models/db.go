// Package models holds the database models of syncdesk and the queries over them.
package models

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/models/dsn"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Dialects syncdesk runs on.
const (
	SQLite   = dsn.SQLite
	Postgres = dsn.Postgres
)

// Open connects to the database named by a --db value.
//
// SQLite runs in WAL mode with a busy timeout and foreign keys on, and every
// transaction begins IMMEDIATE: a writer takes the write lock up front
// instead of failing with SQLITE_BUSY when a read lock cannot be upgraded.
// The process's transactions queue for that lock at the write gate, first
// come, first served (writegate.go).
//
// Commits are durable (synchronous=FULL: the WAL is synced at each commit),
// as Postgres's are by default. With NORMAL, a commit that a power cut or an
// OS crash catches before the next checkpoint is rolled back, and syncdesk
// acts on its commits outside the database: a claim is committed (lease,
// frozen create body, attempt count) before its request leaves, and a
// webhook is committed before it is acknowledged. Rolled back after the
// fact, the first would send the link as new — a second create where the
// provider ignores Idempotency-Key, since nothing marks the first as
// possibly delivered — and the second would lose an event the provider will
// not send again. The engine claims and finishes links in batches, so the
// sync per commit costs it little.
func Open(v string) (*gorm.DB, error) {
	dialect, source, err := dsn.Parse(v)
	if err != nil {
		return nil, err
	}
	cfg := &gorm.Config{
		Logger:                 logger.Discard,
		NowFunc:                func() time.Time { return time.Now().UTC() },
		SkipDefaultTransaction: true,
		TranslateError:         true,
	}
	var db *gorm.DB
	switch dialect {
	case SQLite:
		db, err = gorm.Open(classifying{sqlite.Open(sqliteDSN(source))}, cfg)
	case Postgres:
		db, err = gorm.Open(classifying{postgres.Open(source)}, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	if dialect == SQLite {
		// WAL allows many readers beside one writer; more connections than
		// that only queue on the write lock.
		sqlDB.SetMaxOpenConns(8)
		gate := newWriteGate(sqlDB)
		db.ConnPool, db.Statement.ConnPool = gate, gate
	} else {
		sqlDB.SetMaxOpenConns(32)
		sqlDB.SetMaxIdleConns(16)
	}
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("connect to %s database: %w", dialect, err)
	}
	return db, nil
}

func sqliteDSN(path string) string {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "10000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return "file:" + path + sep + q.Encode()
}

// Close releases the database's connections.
func Close(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Dialect names the database behind db: SQLite or Postgres.
func Dialect(db *gorm.DB) string { return db.Dialector.Name() }

// indexedBy names a table (and its alias, if any) for a FROM clause, on
// SQLite with the index it must read. SQLite plans without statistics, and for some queries would rather
// take a broader index and sort; Postgres's planner needs no such hint.
func indexedBy(dialect, table, index string) string {
	if dialect == SQLite {
		return table + " INDEXED BY " + index
	}
	return table
}

// DatabaseNow reads the database server's clock: the time every instance
// sharing the database keeps to (clock.Anchored). SQLite's is this
// machine's, the only one that can share its file.
func DatabaseNow(db *gorm.DB) (time.Time, error) {
	if Dialect(db) == Postgres {
		var now time.Time
		if err := db.Raw("SELECT clock_timestamp()").Row().Scan(&now); err != nil {
			return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
		}
		return now.UTC(), nil
	}
	var text string
	if err := db.Raw("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')").Row().Scan(&text); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
	}
	now, err := time.Parse("2006-01-02 15:04:05.000", text)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %q: %w", text, err)
	}
	return now, nil
}
