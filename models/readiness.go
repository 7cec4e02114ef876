package models

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// Ping checks that the database answers, classifying the driver's error as
// queries' errors are (see AsUnavailable).
func Ping(ctx context.Context, db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return markUnavailable(sqlDB.PingContext(ctx))
}

// ProveWrite commits a small write, to show that the database can write
// right now: a ping and a read still succeed on a full disk or on a
// read-only server, a commit does not. The write neither grows a table nor
// changes anything syncdesk reads, so it can be made at every probe.
func ProveWrite(db *gorm.DB) error {
	return db.Transaction(func(tx *gorm.DB) error {
		if Dialect(tx) == SQLite {
			return flipUserVersion(tx)
		}
		return rewriteNewestMigration(tx)
	})
}

// flipUserVersion flips the lowest bit of SQLite's user_version, a header
// field left to the application that syncdesk uses for nothing else. The
// value must change: SQLite writes no page for an update that leaves the
// bytes as they were, and a commit with nothing to write proves nothing.
func flipUserVersion(tx *gorm.DB) error {
	var v int64
	if err := tx.Raw("PRAGMA user_version").Scan(&v).Error; err != nil {
		return err
	}
	return tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", v^1)).Error
}

// rewriteNewestMigration rewrites the newest row of schema_migrations with
// its own values: Postgres writes a new row version (and its WAL) for it
// even so, and refuses it on a read-only server.
func rewriteNewestMigration(tx *gorm.DB) error {
	res := tx.Exec(`UPDATE schema_migrations SET applied_at = applied_at
		WHERE version = (SELECT MAX(version) FROM schema_migrations)`)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return errors.New("prove a write: schema_migrations has no row to rewrite; run syncdesk migrate")
	}
	return nil
}
