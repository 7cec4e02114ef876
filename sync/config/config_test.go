package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "syncdesk.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestPrecedenceFlagsOverEnvOverFileOverDefaults(t *testing.T) {
	p := writeFile(t, "addr: 127.0.0.1:7000\ndb: sqlite:/tmp/file.db\nsession: {idle_timeout: 30m}\n")

	cfg, err := Load(p, Overrides{})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7000", cfg.Addr)
	require.Equal(t, 30*time.Minute, cfg.Session.IdleTimeout)
	require.Equal(t, Default().Session.AbsoluteTimeout, cfg.Session.AbsoluteTimeout, "unset values keep their defaults")

	t.Setenv("SYNCDESK_ADDR", "127.0.0.1:7001")
	cfg, err = Load(p, Overrides{})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7001", cfg.Addr, "the environment beats the file")
	require.Equal(t, "sqlite:/tmp/file.db", cfg.DB)

	cfg, err = Load(p, Overrides{Addr: "127.0.0.1:7002", DB: "postgres://u@h/db"})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7002", cfg.Addr, "a flag beats the environment")
	require.Equal(t, "postgres://u@h/db", cfg.DB)
}

func TestBadValuesNameTheSetting(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"addr: nonsense", "setting addr"},
		{"db: mysql://x", "setting db"},
		{"session: {idle_timeout: -1s}", "setting session.idle_timeout"},
		{"login: {max_failures: 0}", "setting login.max_failures"},
		{"log: {level: loud}", "setting log.level"},
		{"trusted_proxies: [nope]", "setting trusted_proxies"},
		{"tls: {cert_file: a.pem}", "setting tls"},
		{"sesion: {}", "field sesion not found"},
		{"login: {window: soon}", "cannot unmarshal"},
	} {
		_, err := Load(writeFile(t, tc.yaml), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}

func TestMissingFileIsAnError(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), Overrides{})
	require.ErrorContains(t, err, "nope.yaml")
}
