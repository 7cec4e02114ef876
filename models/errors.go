package models

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
	"gorm.io/gorm"
)

// Sentinel errors that web maps to HTTP statuses in one place.
var (
	// ErrNotFound means the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a unique key already holds the value.
	ErrConflict = errors.New("already exists")
	// ErrUnavailable means the database cannot be reached or cannot write
	// right now: an outage that waiting can mend, not a fault of the request.
	ErrUnavailable = errors.New("the database is unavailable")
)

// InvalidError is bad input described in words a person can act on.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return e.Reason }

// Invalid returns an InvalidError with the given reason.
func Invalid(reason string) error { return &InvalidError{Reason: reason} }

// UnavailableError is a database error that says the database cannot be
// reached or cannot write. errors.Is(err, ErrUnavailable) holds for it, and
// it unwraps to the driver's error, whose text it keeps.
type UnavailableError struct {
	// Reason says what is wrong in a support person's words.
	Reason string
	// Err is the error as the database driver gave it.
	Err error
}

func (e *UnavailableError) Error() string { return e.Err.Error() }

// Unwrap gives both ErrUnavailable and the driver's error to errors.Is and errors.As.
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// What an outage looks like to a support person.
const (
	reasonUnreachable = "The database cannot be reached; syncdesk will answer again when it is back."
	reasonCannotWrite = "The database cannot write (disk full?); syncdesk will answer again once it can write."
	reasonReadOnly    = "The database is read-only, so nothing can be saved; syncdesk will answer again once it accepts writes."
	reasonNoRoom      = "The database has no room for more work right now (too many connections or out of memory); try again in a few seconds."
)

// AsUnavailable reports whether err says the database cannot be reached or
// cannot write, and if so sets *target to it. Errors from queries through
// Open's handle are classified where they arise; others (a driver's error
// that came by another road) are classified here by the drivers' own error
// types, so that a failure to reach a provider is never taken for an outage.
func AsUnavailable(err error, target **UnavailableError) bool {
	if err == nil {
		return false
	}
	if errors.As(err, target) {
		return true
	}
	reason := unavailableReason(err)
	if reason == "" {
		return false
	}
	*target = &UnavailableError{Reason: reason, Err: err}
	return true
}

// markUnavailable classifies an error that the database driver returned, and
// so may read a bare end of stream or a reset socket as the server gone.
func markUnavailable(err error) error {
	var down *UnavailableError
	if err == nil || errors.As(err, &down) {
		return err
	}
	reason := unavailableReason(err)
	if reason == "" && lostConnection(err) {
		reason = reasonUnreachable
	}
	if reason == "" {
		return err
	}
	return &UnavailableError{Reason: reason, Err: err}
}

// unavailableReason names the outage err reports by the drivers' own error
// types, or "" when it reports none.
func unavailableReason(err error) string {
	var pgErr *pgconn.PgError
	var sqliteErr sqlite3.Error
	switch {
	case errors.As(err, new(*pgconn.ConnectError)):
		return reasonUnreachable // refused, reset, timed out or turned away while connecting
	case errors.As(err, &pgErr):
		return postgresReason(pgErr.Code)
	case errors.As(err, &sqliteErr):
		return sqliteReason(sqliteErr.Code)
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.Is(err, pgconn.ErrConnClosed):
		return reasonUnreachable
	}
	return ""
}

// Contended reports whether err is Postgres choosing this transaction to
// give way to another that wrote the same rows at the same moment (a
// deadlock, 40P01, or a serialization failure, 40001): nothing is wrong,
// and the same request sent again goes through. Not an outage.
func Contended(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// postgresReason reads a SQLSTATE (postgresql.org/docs/current/errcodes-appendix.html).
func postgresReason(code string) string {
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		code == "57P01", code == "57P02", code == "57P03": // admin shutdown, crash shutdown, cannot connect now
		return reasonUnreachable
	case code == "53100", code == "58030": // disk full, I/O error
		return reasonCannotWrite
	case strings.HasPrefix(code, "53"): // insufficient resources: memory, connections
		return reasonNoRoom
	case code == "25006": // read-only SQL transaction: a standby, or default_transaction_read_only
		return reasonReadOnly
	}
	return ""
}

// sqliteReason reads a SQLite result code (sqlite.org/rescode.html).
func sqliteReason(code sqlite3.ErrNo) string {
	switch code {
	case sqlite3.ErrFull, sqlite3.ErrIoErr:
		return reasonCannotWrite
	case sqlite3.ErrReadonly:
		return reasonReadOnly
	case sqlite3.ErrCantOpen:
		return reasonUnreachable
	}
	return ""
}

// lostConnection is true when the socket ended or was reset mid-query:
// pgx returns that bare, with no type of its own to tell it by.
func lostConnection(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, new(*net.OpError))
}

// classifying is a GORM dialector whose errors say when the database is
// unavailable: every error GORM adds passes through Translate, so this is
// where a driver's error is known to be the database's.
type classifying struct{ gorm.Dialector }

// Translate lets the dialect translate err (unique keys, foreign keys), then marks an outage.
func (d classifying) Translate(err error) error {
	if t, ok := d.Dialector.(gorm.ErrorTranslator); ok {
		err = t.Translate(err)
	}
	return markUnavailable(err)
}

// Apply passes GORM's configuration to the dialect, which may set defaults in it.
func (d classifying) Apply(c *gorm.Config) error {
	if a, ok := d.Dialector.(interface{ Apply(*gorm.Config) error }); ok {
		return a.Apply(c)
	}
	return nil
}

// SavePoint is the dialect's, for nested transactions.
func (d classifying) SavePoint(tx *gorm.DB, name string) error {
	return d.Dialector.(gorm.SavePointerDialectorInterface).SavePoint(tx, name)
}

// RollbackTo is the dialect's, for nested transactions.
func (d classifying) RollbackTo(tx *gorm.DB, name string) error {
	return d.Dialector.(gorm.SavePointerDialectorInterface).RollbackTo(tx, name)
}
