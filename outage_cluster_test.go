package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/models"
)

// cluster is a private Postgres cluster under a temp dir, listening on
// loopback only, that the outage benchmark stops and starts at will.
type cluster struct {
	bin, dir string
	port     int
}

// startCluster creates and starts a cluster on the port given, which must be
// free. Cleanups stop it, whatever happens in between, and remove its folder.
func startCluster(b *testing.B, pgBin string, port int) *cluster {
	b.Helper()
	free, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	require.NoError(b, err, "the private cluster's port %d is taken (set SYNCDESK_OUTAGE_PORT to a free one)", port)
	require.NoError(b, free.Close())
	// Not b.TempDir: its parent folder is closed to the postgres user.
	dir, err := os.MkdirTemp("", "syncdesk-outage-")
	require.NoError(b, err)
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &cluster{bin: pgBin, dir: dir, port: port}
	require.NoError(b, c.init())
	b.Cleanup(func() {
		if err := c.stop(); err != nil {
			b.Errorf("stop the private cluster in %s: %v", dir, err)
		}
	})
	require.NoError(b, c.start())
	return c
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// init creates the cluster. Postgres refuses to run as root, so as root
// it runs as the postgres user.
func (c *cluster) init() error {
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres:", c.dir).CombinedOutput(); err != nil {
			return fmt.Errorf("chown %s: %v: %s", c.dir, err, out)
		}
	}
	return c.run("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "--no-sync")
}

func (c *cluster) start() error {
	return c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "postgres.log"), "-w", "-o",
		fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off", c.port, c.dir), "start")
}

// stop stops the server if one runs in the cluster: its pid file says so,
// even after a start that failed half way.
func (c *cluster) stop() error {
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
}

func (c *cluster) run(name string, args ...string) error {
	prog := exec.Command(filepath.Join(c.bin, name), args...)
	if os.Geteuid() == 0 {
		prog = exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, name)}, args...)...)
	}
	if out, err := prog.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, out)
	}
	return nil
}

// createDB creates a database in the cluster and returns its URL.
func (c *cluster) createDB(b *testing.B, name string) string {
	b.Helper()
	admin, err := models.Open(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port))
	require.NoError(b, err)
	defer models.Close(admin)
	require.NoError(b, admin.Exec(`CREATE DATABASE "`+name+`"`).Error)
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}
