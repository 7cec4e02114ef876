// Command syncdesk is the integration desk: it pushes local records to
// external services without duplicates, takes their webhooks exactly once,
// and shows it all to support staff. Run it with no arguments to serve.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/migrations"
	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/schedule"
	"github.com/syncdesk/syncdesk/web"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `syncdesk — the integration desk

Usage:
  syncdesk [serve]                               start the server (the default)
  syncdesk migrate                               apply database migrations and exit
  syncdesk user add EMAIL --role ROLE [--password-stdin]
  syncdesk user list
  syncdesk user disable EMAIL
  syncdesk token create NAME                     print a new API token once
  syncdesk version

Flags (each also read from the environment; flags win):
  --addr    SYNCDESK_ADDR    listen address (default 127.0.0.1:8080)
  --db      SYNCDESK_DB      sqlite:PATH (default sqlite:./syncdesk.db) or a postgres:// URL
  --config  SYNCDESK_CONFIG  optional YAML file for every other setting
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// cli is one invocation: the streams and the flags every command shares.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	addr, db, conf string
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := c.flags("syncdesk")
	var role string
	var passwordStdin bool
	fs.StringVar(&role, "role", "", "role of a new user: viewer, operator or admin")
	fs.BoolVar(&passwordStdin, "password-stdin", false, "read the new user's password from standard input")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) == 0 {
		pos = []string{"serve"}
	}
	cmd := strings.Join(pos[:min(2, len(pos))], " ")
	switch {
	case pos[0] == "serve" && len(pos) == 1:
		err = c.serve()
	case pos[0] == "migrate" && len(pos) == 1:
		err = c.migrate()
	case pos[0] == "version" && len(pos) == 1:
		fmt.Fprintln(stdout, "syncdesk", buildVersion())
	case cmd == "user add" && len(pos) == 3:
		err = c.userAdd(pos[2], role, passwordStdin)
	case cmd == "user list" && len(pos) == 2:
		err = c.userList()
	case cmd == "user disable" && len(pos) == 3:
		err = c.userDisable(pos[2])
	case cmd == "token create" && len(pos) == 3:
		err = c.tokenCreate(pos[2])
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "syncdesk:", err)
		return 1
	}
	return 0
}

func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() { fmt.Fprint(c.stderr, usage) }
	fs.StringVar(&c.addr, "addr", "", "listen address (env SYNCDESK_ADDR)")
	fs.StringVar(&c.db, "db", "", "database: sqlite:PATH or postgres://… (env SYNCDESK_DB)")
	fs.StringVar(&c.conf, "config", os.Getenv("SYNCDESK_CONFIG"), "YAML configuration file (env SYNCDESK_CONFIG)")
	return fs
}

// parseInterleaved lets flags stand before, between and after the words of a
// command ("user add EMAIL --role admin").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

func (c *cli) config() (config.Config, error) {
	return config.Load(c.conf, config.Overrides{Addr: c.addr, DB: c.db})
}

// openDB loads the configuration and opens the migrated database.
func (c *cli) openDB() (config.Config, *gorm.DB, error) {
	cfg, err := c.config()
	if err != nil {
		return cfg, nil, err
	}
	db, err := models.Open(cfg.DB)
	if err != nil {
		return cfg, nil, err
	}
	if _, err := migrations.Apply(db); err != nil {
		_ = models.Close(db)
		return cfg, nil, fmt.Errorf("migrate: %w", err)
	}
	return cfg, db, nil
}

func (c *cli) serve() error {
	cfg, db, err := c.openDB()
	if err != nil {
		return err
	}
	defer models.Close(db)
	log := newLogger(cfg.Log, c.stderr)
	clk := clock.Real{}
	if err := c.firstAdmin(db, clk.Now()); err != nil {
		return err
	}
	sched, err := schedule.New(tasks(db, cfg, clk), locker(db), log)
	if err != nil {
		return err
	}
	srv, err := web.New(web.Deps{DB: db, Config: cfg, Clock: clk, Log: log, Version: buildVersion()})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sched.Start()
	defer sched.Stop()
	err = srv.Serve(ctx, func(addr string) {
		scheme := "http"
		if cfg.TLS.CertFile != "" {
			scheme = "https"
		}
		fmt.Fprintf(c.stdout, "syncdesk %s is running at %s://%s (database %s)\nPress Ctrl-C to stop.\n",
			buildVersion(), scheme, addr, models.RedactDSN(cfg.DB))
		log.Info("serving", "addr", addr, "db", models.Dialect(db))
	})
	log.Info("stopped")
	return err
}

// tasks is the table of background tasks: name, period, one call each.
func tasks(db *gorm.DB, cfg config.Config, clk clock.Clock) []schedule.Task {
	return []schedule.Task{
		{Name: "prune-sessions", Every: 10 * time.Minute, Run: func(ctx context.Context) error {
			_, err := models.PruneSessions(db.WithContext(ctx), clk.Now(), cfg.Session.IdleTimeout)
			return err
		}},
	}
}

// locker makes each task run on one instance at a time when instances share
// a Postgres; SQLite serves one instance, so gocron's own singleton mode is enough.
func locker(db *gorm.DB) *schedule.PGLocker {
	if models.Dialect(db) != models.Postgres {
		return nil
	}
	sqlDB, _ := db.DB()
	return &schedule.PGLocker{DB: sqlDB}
}

// firstAdmin creates an admin with a generated password when there are no
// users at all, and prints the password once.
func (c *cli) firstAdmin(db *gorm.DB, now time.Time) error {
	n, err := models.CountUsers(db)
	if err != nil || n > 0 {
		return err
	}
	password := models.NewSecret(15)
	u, err := models.CreateUser(db, "admin@localhost", models.RoleAdmin, password, now)
	if errors.Is(err, models.ErrConflict) {
		return nil // another instance created it first
	}
	if err != nil {
		return err
	}
	_ = models.Audit(db, models.AuditEntry{At: now, Actor: "system", Action: "user.add", Target: u.Email,
		Outcome: models.OutcomeSuccess, Detail: "first admin, created at first start"})
	fmt.Fprintf(c.stdout, "\nFirst start: created the admin account (the password is shown only this once)\n"+
		"  email:    %s\n  password: %s\n\n", u.Email, password)
	return nil
}

func (c *cli) migrate() error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	db, err := models.Open(cfg.DB)
	if err != nil {
		return err
	}
	defer models.Close(db)
	n, err := migrations.Apply(db)
	if err != nil {
		return err
	}
	v, _, _ := migrations.Current(db)
	fmt.Fprintf(c.stdout, "applied %d migration(s); the database is at version %d\n", n, v)
	return nil
}

func (c *cli) userAdd(email, roleName string, passwordStdin bool) error {
	role, err := models.ParseRole(roleName)
	if err != nil {
		return fmt.Errorf("--role: %w", err)
	}
	password := models.NewSecret(15)
	if passwordStdin {
		line, err := bufio.NewReader(c.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read password: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	}
	_, db, err := c.openDB()
	if err != nil {
		return err
	}
	defer models.Close(db)
	now := time.Now().UTC()
	u, err := models.CreateUser(db, email, role, password, now)
	if err != nil {
		return err
	}
	if err := models.Audit(db, models.AuditEntry{At: now, Actor: "cli", Action: "user.add", Target: u.Email,
		Outcome: models.OutcomeSuccess, Detail: "role " + string(role)}); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "added %s (%s)\n", u.Email, u.Role)
	if !passwordStdin {
		fmt.Fprintf(c.stdout, "password: %s\n", password)
	}
	return nil
}

func (c *cli) userList() error {
	_, db, err := c.openDB()
	if err != nil {
		return err
	}
	defer models.Close(db)
	users, err := models.ListUsers(db)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EMAIL\tROLE\tSTATE\tCREATED")
	for _, u := range users {
		state := "active"
		if u.Disabled() {
			state = "disabled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Email, u.Role, state, u.CreatedAt.UTC().Format(time.DateTime))
	}
	return tw.Flush()
}

func (c *cli) userDisable(email string) error {
	_, db, err := c.openDB()
	if err != nil {
		return err
	}
	defer models.Close(db)
	now := time.Now().UTC()
	u, err := models.DisableUser(db, email, now)
	if err != nil {
		return err
	}
	if err := models.Audit(db, models.AuditEntry{At: now, Actor: "cli", Action: "user.disable", Target: u.Email,
		Outcome: models.OutcomeSuccess}); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "disabled %s and ended their sessions\n", u.Email)
	return nil
}

func (c *cli) tokenCreate(name string) error {
	_, db, err := c.openDB()
	if err != nil {
		return err
	}
	defer models.Close(db)
	now := time.Now().UTC()
	token, t, err := models.CreateAPIToken(db, name, "cli", now)
	if err != nil {
		return err
	}
	if err := models.Audit(db, models.AuditEntry{At: now, Actor: "cli", Action: "token.create", Target: t.Name,
		Outcome: models.OutcomeSuccess}); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "token %q created; it is shown only this once:\n%s\n", t.Name, token)
	return nil
}

func newLogger(cfg config.Log, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.Level(cfg.SlogLevel())}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// buildVersion is the -ldflags version, or the VCS revision Go stamped in.
func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return version
}
