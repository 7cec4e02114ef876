package models_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestAsUnavailableReadsTheDriversOutages(t *testing.T) {
	addr := closedPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, refused := pgconn.Connect(ctx, "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=2")
	require.Error(t, refused)
	_, cantOpen := models.Open("sqlite:" + filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
	require.Error(t, cantOpen)

	unreachable := "The database cannot be reached"
	cannotWrite := "The database cannot write (disk full?)"
	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"a refused connection":                {fmt.Errorf("load session: %w", refused), unreachable},
		"an admin shutdown (57P01)":           {&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, unreachable},
		"a server starting up":                {&pgconn.PgError{Code: "57P03"}, unreachable},
		"a connection failure (08006)":        {fmt.Errorf("claim: %w", &pgconn.PgError{Code: "08006"}), unreachable},
		"a full Postgres disk":                {&pgconn.PgError{Code: "53100", Message: "could not extend file"}, cannotWrite},
		"too many connections":                {&pgconn.PgError{Code: "53300"}, "no room for more work"},
		"a read-only Postgres":                {&pgconn.PgError{Code: "25006"}, "read-only"},
		"a closed pgx connection":             {fmt.Errorf("x: %w", pgconn.ErrConnClosed), unreachable},
		"a bad pooled connection":             {driver.ErrBadConn, unreachable},
		"a full SQLite disk":                  {fmt.Errorf("commit: %w", sqlite3.Error{Code: sqlite3.ErrFull}), cannotWrite},
		"a SQLite I/O error":                  {sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrWrite}, cannotWrite},
		"a read-only SQLite file":             {sqlite3.Error{Code: sqlite3.ErrReadonly}, "read-only"},
		"a SQLite file that cannot be opened": {cantOpen, unreachable},
	} {
		t.Run(name, func(t *testing.T) {
			var down *models.UnavailableError
			require.True(t, models.AsUnavailable(c.err, &down), "%v is an outage", c.err)
			require.Contains(t, down.Reason, c.want)
			require.ErrorIs(t, down, models.ErrUnavailable)
			require.ErrorIs(t, down, c.err, "the driver's error is kept")
			require.Equal(t, c.err.Error(), down.Error(), "the text stays the driver's")
			again := fmt.Errorf("wrapped: %w", down)
			var same *models.UnavailableError
			require.True(t, models.AsUnavailable(again, &same))
			require.Same(t, down, same, "an error classified once is found as it is")
		})
	}
}

func TestAsUnavailableLeavesOtherErrorsAlone(t *testing.T) {
	addr := closedPort(t)
	_, providerDown := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr + "/deals")
	require.Error(t, providerDown)
	for name, err := range map[string]error{
		"a provider that refuses connections": fmt.Errorf("send: %w", providerDown),
		"a unique key (23505)":                &pgconn.PgError{Code: "23505"},
		"a syntax error (42601)":              &pgconn.PgError{Code: "42601"},
		"a SQLite constraint":                 sqlite3.Error{Code: sqlite3.ErrConstraint},
		"not found":                           models.ErrNotFound,
		"a cancelled request":                 context.Canceled,
		"bad input":                           models.Invalid("the id must be a number"),
		"nil":                                 nil,
	} {
		var down *models.UnavailableError
		require.False(t, models.AsUnavailable(err, &down), "%s is not a database outage", name)
		require.Nil(t, down)
	}
}

// A read-only SQLite file refuses a write with SQLITE_READONLY, which reads
// as an outage.
func TestAWriteToAReadOnlySQLiteFileIsAnOutage(t *testing.T) {
	path := dbtest.SQLitePath(t)
	db, err := models.Open(path + "?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { _ = models.Close(db) })
	err = models.ProveWrite(db)
	require.Error(t, err)
	var down *models.UnavailableError
	require.True(t, models.AsUnavailable(err, &down), "%v", err)
	require.Contains(t, down.Reason, "read-only")
	require.True(t, errors.As(err, new(sqlite3.Error)))
}
