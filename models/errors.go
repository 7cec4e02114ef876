package models

import "errors"

// Sentinel errors that web maps to HTTP statuses in one place.
var (
	// ErrNotFound means the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a unique key already holds the value.
	ErrConflict = errors.New("already exists")
)

// InvalidError is bad input described in words a person can act on.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return e.Reason }

// Invalid returns an InvalidError with the given reason.
func Invalid(reason string) error { return &InvalidError{Reason: reason} }
