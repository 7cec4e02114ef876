package models_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// Every connection of the pool, not only the first, runs with the settings
// the engine's guarantees rest on: WAL, durable commits (see models.Open),
// foreign keys.
func TestSQLiteConnectionsAreDurable(t *testing.T) {
	db := dbtest.SQLite(t)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	ctx := context.Background()
	// Hold several connections at once so that the pool must open new ones.
	var conns []*sql.Conn
	for range 4 {
		c, err := sqlDB.Conn(ctx)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	for i, c := range conns {
		var journal string
		var synchronous, foreignKeys int
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&journal))
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&synchronous))
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&foreignKeys))
		require.Equal(t, "wal", journal, "connection %d", i)
		require.Equal(t, 2, synchronous, "connection %d: synchronous must be FULL (2)", i)
		require.Equal(t, 1, foreignKeys, "connection %d", i)
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
}

// The database's clock is read to the millisecond on both databases; both
// run on this machine here, so it tells this machine's time.
func TestDatabaseNowReadsTheServersClock(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		before := time.Now().Add(-time.Millisecond)
		now, err := models.DatabaseNow(db.WithContext(context.Background()))
		after := time.Now().Add(time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, time.UTC, now.Location())
		require.False(t, now.Before(before) || now.After(after), "%v not within [%v, %v]", now, before, after)
	})
}
