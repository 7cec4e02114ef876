// Package dsn reads the --db setting: which database, and how to reach it.
// It imports nothing of syncdesk's, so that the configuration can check the
// setting and models can open it.
package dsn

import (
	"errors"
	"net/url"
	"strings"
)

// Dialects syncdesk runs on.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Parse splits a --db value into its dialect and the driver's DSN. It
// accepts "sqlite:PATH" and "postgres://…" (or "postgresql://…").
func Parse(v string) (dialect, dsn string, err error) {
	switch {
	case strings.HasPrefix(v, "sqlite:"):
		path := strings.TrimPrefix(v, "sqlite:")
		if path == "" {
			return "", "", errors.New("sqlite: needs a file path, e.g. sqlite:./syncdesk.db")
		}
		return SQLite, path, nil
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		// url.Parse's error quotes the whole URL, password and all: say
		// what is wrong without it.
		if _, err := url.Parse(v); err != nil {
			return "", "", errors.New("the postgres URL cannot be read: escape special characters in the user name and password (% as %25, @ as %40, : as %3A, / as %2F)")
		}
		return Postgres, v, nil
	}
	// Not echoed: a key=value DSN carries its password in the clear.
	return "", "", errors.New("the database must be sqlite:PATH or a postgres:// URL")
}

// Redact hides the password in a database URL — in its user part or as
// a password query parameter — so that it can be printed.
func Redact(v string) string {
	if !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") {
		return v // sqlite:PATH carries no secret
	}
	u, err := url.Parse(v)
	if err != nil {
		return "postgres://(a URL that cannot be read)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	for k := range q {
		if strings.Contains(strings.ToLower(k), "password") {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
