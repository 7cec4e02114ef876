package models_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

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
