package dsn

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A database password never reaches what syncdesk prints: not an error about
// a URL it cannot read, nor the banner's database URL.
func TestDatabasePasswordsAreNeverPrinted(t *testing.T) {
	for _, v := range []string{"postgres://syncdesk:s3cr%t-hunter2@db:5432/x", "host=db password=hunter2 dbname=x", "mysql://u:hunter2@db/x"} {
		_, _, err := Parse(v)
		require.Error(t, err, v)
		require.NotContains(t, err.Error(), "hunter2", v)
	}
	for v, want := range map[string]string{
		"postgres://syncdesk:hunter2@db:5432/x?sslmode=require":     "postgres://syncdesk:xxxxx@db:5432/x?sslmode=require",
		"postgres://syncdesk@db/x?password=hunter2":                 "postgres://syncdesk@db/x?password=xxxxx",
		"postgresql://db/x?sslpassword=hunter2&sslmode=verify-full": "postgresql://db/x?sslmode=verify-full&sslpassword=xxxxx",
		"postgres://syncdesk:s3cr%t-hunter2@db/x":                   "postgres://(a URL that cannot be read)",
		"sqlite:./syncdesk.db":                                      "sqlite:./syncdesk.db",
	} {
		require.Equal(t, want, Redact(v), v)
	}
}

func TestParseNamesTheDialect(t *testing.T) {
	dialect, source, err := Parse("sqlite:./syncdesk.db")
	require.NoError(t, err)
	require.Equal(t, SQLite, dialect)
	require.Equal(t, "./syncdesk.db", source)
	dialect, _, err = Parse("postgresql://db/x")
	require.NoError(t, err)
	require.Equal(t, Postgres, dialect)
	_, _, err = Parse("sqlite:")
	require.ErrorContains(t, err, "needs a file path")
}
