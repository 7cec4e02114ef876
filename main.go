// Command syncdesk is the integration desk: it pushes local records to
// external services without duplicates, takes their webhooks exactly once,
// and shows it all to support staff. Run it with no arguments to serve.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/migrations"
	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dsn"
	"github.com/syncdesk/syncdesk/sync/alerts"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/logdedup"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/ratelimit"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
	"github.com/syncdesk/syncdesk/sync/schedule"
	"github.com/syncdesk/syncdesk/sync/services"
	"github.com/syncdesk/syncdesk/sync/source"
	"github.com/syncdesk/syncdesk/sync/tracing"
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
  syncdesk seed [--links N] [--attempts M]       fill an empty database with N links (default 100000)
                                                 and M attempts (default 5 per link), for trying
                                                 the pages at scale and for benchmarks
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
	var links, attempts int
	fs.IntVar(&links, "links", 100_000, "seed: how many links to create")
	fs.IntVar(&attempts, "attempts", -1, "seed: how many attempts to create (default 5 per link)")
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
	case pos[0] == "seed" && len(pos) == 1:
		err = c.seed(links, attempts)
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

func (c *cli) overrides() config.Overrides { return config.Overrides{Addr: c.addr, DB: c.db} }

// config loads the configuration, for a command that adds nothing to it.
func (c *cli) config() (config.Config, error) { return config.Load(c.conf, c.overrides()) }

// serveConfig reads the configuration and, for the demo, starts the
// sandboxes whose addresses are its services; then it completes it, so the
// demo's services are defaulted and validated like any others.
func (c *cli) serveConfig() (config.Config, *sandbox.Demo, error) {
	cfg, err := config.Read(c.conf, c.overrides())
	if err != nil {
		return cfg, nil, err
	}
	var demo *sandbox.Demo
	if cfg.Demo {
		if demo, cfg.Services, err = sandbox.StartDemo(); err != nil {
			return cfg, nil, err
		}
	}
	if err := cfg.Complete(); err != nil {
		if demo != nil {
			stopDemo(demo)
		}
		return cfg, nil, err
	}
	return cfg, demo, nil
}

// openDB loads the configuration and opens the migrated database.
func (c *cli) openDB() (config.Config, *gorm.DB, error) {
	cfg, err := c.config()
	if err != nil {
		return cfg, nil, err
	}
	db, err := open(cfg)
	return cfg, db, err
}

// open opens the configured database and applies the migrations.
func open(cfg config.Config) (*gorm.DB, error) {
	db, err := models.Open(cfg.DB)
	if err != nil {
		return nil, err
	}
	if _, err := migrations.Apply(db); err != nil {
		_ = models.Close(db)
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return db, nil
}

func (c *cli) serve() error {
	cfg, demo, err := c.serveConfig()
	if err != nil {
		return err
	}
	if demo != nil {
		defer stopDemo(demo)
	}
	db, err := open(cfg)
	if err != nil {
		return err
	}
	defer models.Close(db)
	redactor := redact.New(cfg.Redact)
	log, flushLog := newLogger(cfg.Log, c.stderr, redactor)
	defer flushLog() // the counts of repeated failures not yet written
	clk, err := startClock(db, clock.Real{}, log)
	if err != nil {
		return err
	}
	if err := c.firstAdmin(db, clk.Now()); err != nil {
		return err
	}
	a, err := assemble(cfg, db, clk, log, redactor)
	if err != nil {
		return err
	}
	if demo != nil {
		if err := seedDemo(db, a.engine); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a.sched.Start()
	err = a.web.Serve(ctx, func(addr string) {
		c.printStart(cfg, db, addr, log)
		if demo != nil {
			if err := demo.StartWebhooks("http://" + addr); err != nil {
				log.Error("demo webhooks", "err", err)
			}
		}
	})
	stop()
	a.stop()
	log.Info("stopped")
	return err
}

// stop ends the engines once HTTP has drained, so that no request can start
// work they no longer take, and before the deferred close of the database,
// so that their last writes land: the scheduler's tasks end (sends finish or
// hand back their leases), then reconciliation runs end interrupted, not
// stuck as running, and new ones are refused; last, the refused webhooks
// counted since the inbox's last write are written.
func (a *app) stop() {
	_ = a.sched.Stop()
	_ = a.sources.Close() // after the scheduler: no drain reads any more
	a.rec.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.inbox.Close(ctx); err != nil {
		a.log.Warn("count refused webhooks at stop", "err", err)
	}
	if err := a.tracer.Shutdown(ctx); err != nil {
		a.log.Warn("export the last spans at stop", "err", err)
	}
}

// app is the wired product: the engine, the inbox, the schedules, the web.
type app struct {
	engine  *outbox.Engine
	inbox   *inbox.Receiver
	rec     *reconcile.Reconciler
	sched   *schedule.Scheduler
	sources *source.Set
	web     *web.Server
	log     *slog.Logger
	tracer  *tracing.Provider
}

func assemble(cfg config.Config, db *gorm.DB, clk *clock.Anchored, log *slog.Logger, r *redact.Redactor) (*app, error) {
	r.AddSecrets(cfg.Secrets()...) // after the demo's services are in cfg
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	tp, err := tracing.New(cfg.Tracing, r)
	if err != nil {
		return nil, err
	}
	sendTo, listFrom := connectors(cfg, r, db, log, tp.Active(), ratelimit.NewMetrics(reg))
	eng := outbox.New(db, sendTo, clk, log, outbox.Options{Grace: cfg.ShutdownTimeout, Registry: reg, Redactor: r, Tracer: tp.Active()})
	rec := reconcile.New(db, listFrom, clk, log, reconcile.Options{Redactor: r})
	pauser := services.NewPauser(db, cfg.ServiceNames(), clk, log)
	eng.SetPaused(pauser.Paused)
	breakers := services.NewBreakers(db, services.Configured(cfg), pauser, clk, log, services.BreakerOptions{})
	eng.SetBreaker(breakers)
	reg.MustRegister(breakers.Metrics())
	rc, err := inbox.New(db, cfg.Services, clk, log, r)
	if err != nil {
		return nil, err
	}
	if err := rc.RegisterMetrics(reg); err != nil {
		return nil, err
	}
	// The scheduler goes by the engine's worker id, so that the schedules
	// page and the attempt log name an instance alike.
	channels, err := notify.FromConfig(cfg.Alerts, notify.WithClock(clk))
	if err != nil {
		return nil, err
	}
	al, alertRuns, err := alertTasks(db, cfg.Alerts, clk, log, reg, channels)
	if err != nil {
		return nil, err
	}
	// Each source is a shared task: read by one instance at a time.
	srcs, err := source.Open(context.Background(), cfg, db, eng, source.Options{Clock: clk, Log: log, Redactor: r})
	if err != nil {
		return nil, err
	}
	all := append(append(tasks(db, cfg, clk, log, eng, rc, rec), alertRuns...), srcs.Tasks()...)
	al.SetTasks(taskNames(all))
	al.SetBreakers(services.Configured(cfg))
	sched, err := schedule.New(all, schedule.Options{DB: db, Clock: clk, Instance: eng.WorkerID(), Log: log, Redactor: r})
	if err != nil {
		_ = srcs.Close()
		return nil, err
	}
	srv, err := web.New(web.Deps{DB: db, Config: cfg, Clock: clk, Log: log, Version: buildVersion(),
		Redactor: r, Outbox: eng, Inbox: rc, Metrics: reg, Pauser: pauser, Scheduler: sched,
		Reconciler: rec, Tracer: tp.Active(), Sources: srcs})
	if err != nil {
		_ = srcs.Close()
		return nil, err
	}
	return &app{engine: eng, inbox: rc, rec: rec, sched: sched, web: srv, log: log, tracer: tp, sources: srcs}, nil
}

// maxClockStep is how far this machine's clock may move against the
// database's between two measurements before the log says so.
const maxClockStep = time.Second

// startClock is the clock of every part of this instance: the database's
// (outbox.DatabaseClock, over local), which every instance shares, so that
// leases taken on one machine are read right on another whose clock is
// wrong. The log says when local is off by more than maxClockStep.
func startClock(db *gorm.DB, local clock.Clock, log *slog.Logger) (*clock.Anchored, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clk, err := outbox.DatabaseClock(ctx, db, local)
	if err != nil {
		return nil, err
	}
	if off := clk.Offset(); off.Abs() > maxClockStep {
		log.Warn("this machine's clock is off from the database's; syncdesk keeps to the database's", "database_ahead_by", off)
	}
	return clk, nil
}

// measureClock measures the database's clock again (a scheduled task on
// every instance), and says so in the log when this machine's clock moved
// against it by more than maxClockStep since the last measurement.
func measureClock(ctx context.Context, clk *clock.Anchored, log *slog.Logger) error {
	before := clk.Offset()
	after, err := clk.Measure(ctx)
	if err != nil {
		return fmt.Errorf("measure the database's clock: %w", err)
	}
	if moved := after - before; moved.Abs() > maxClockStep {
		log.Warn("this machine's clock moved against the database's; syncdesk keeps to the database's", "moved_by", -moved, "database_ahead_by", after)
	}
	return nil
}

// stopDemo stops the sandboxes; a hanging sandbox request must not hold up the stop.
func stopDemo(demo *sandbox.Demo) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = demo.Close(ctx)
}

func (c *cli) printStart(cfg config.Config, db *gorm.DB, addr string, log *slog.Logger) {
	scheme := "http"
	if cfg.TLS.CertFile != "" {
		scheme = "https"
	}
	fmt.Fprintf(c.stdout, "syncdesk %s is running at %s://%s (database %s)\n", buildVersion(), scheme, addr, dsn.Redact(cfg.DB))
	if cfg.Demo {
		fmt.Fprintf(c.stdout, "Demo mode: sandbox CRM at %s and payment provider at %s, with faults on; records are seeded.\n",
			cfg.Services["crm"].BaseURL, cfg.Services["payments"].BaseURL)
		fmt.Fprintf(c.stdout, "Give reconciliation something to find: curl -X POST %s/_sandbox/drift -d '{\"delete\":3,\"alter\":2,\"unlinked\":1,\"duplicate\":1}'\n",
			cfg.Services["crm"].BaseURL)
	}
	fmt.Fprintln(c.stdout, "Press Ctrl-C to stop.")
	log.Info("serving", "addr", addr, "db", models.Dialect(db), "demo", cfg.Demo, "services", len(cfg.Services))
}

// connectors builds one HTTP connector per configured service, shared by
// the outbox (which sends) and reconciliation (which lists).
// Each paces its calls through the service's rate limiter, shared through
// the database with every instance.
func connectors(cfg config.Config, r *redact.Redactor, db *gorm.DB, log *slog.Logger, tp trace.TracerProvider,
	waits *ratelimit.Metrics) ([]outbox.Service, []reconcile.Service) {
	var send []outbox.Service
	var list []reconcile.Service
	for _, name := range cfg.ServiceNames() {
		svc := cfg.Services[name]
		if len(svc.Objects) == 0 {
			continue // webhooks only
		}
		gate := ratelimit.New(db, name, svc.RateLimit, ratelimit.Options{Logger: log, MaxBlock: svc.Retry.Max, Metrics: waits})
		conn := connector.NewHTTP(name, svc, r, nil).WithGate(gate).WithTracer(tp)
		send = append(send, outbox.Service{Name: name, Config: svc, Conn: conn})
		list = append(list, reconcile.Service{Name: name, Config: svc, Conn: conn})
	}
	return send, list
}

// seedDemo fills an empty database with the demo's records.
func seedDemo(db *gorm.DB, eng *outbox.Engine) error {
	if seeded, err := models.AnyRecord(db); err != nil || seeded {
		return err
	}
	for _, r := range sandbox.DemoRecords() {
		if _, err := eng.Upsert(context.Background(), r.Type, r.ID, []byte(r.Payload)); err != nil {
			return fmt.Errorf("seed %s/%s: %w", r.Type, r.ID, err)
		}
	}
	return nil
}

// tasks is the table of background tasks: name, period, one call each.
// Each runs once per period across the instances sharing the database,
// except those marked EveryInstance.
func tasks(db *gorm.DB, cfg config.Config, clk *clock.Anchored, log *slog.Logger, eng *outbox.Engine, rc *inbox.Receiver, rec *reconcile.Reconciler) []schedule.Task {
	return []schedule.Task{
		{Name: "send", Every: time.Second, Run: eng.Drain, EveryInstance: true},
		{Name: "measure-clock", Every: 15 * time.Second, EveryInstance: true, Run: func(ctx context.Context) error {
			return measureClock(ctx, clk, log)
		}},
		{Name: "rescue-expired-leases", Every: 15 * time.Second, Run: func(ctx context.Context) error {
			_, err := eng.Rescue(ctx)
			return err
		}},
		{Name: "prune-attempts", Every: time.Hour, Run: func(ctx context.Context) error {
			_, err := eng.PruneAttempts(ctx, cfg.AttemptRetention)
			return err
		}},
		{Name: "refresh-stats", Every: 10 * time.Second, StartNow: true, Run: func(ctx context.Context) error {
			return models.RefreshStats(db.WithContext(ctx), clk.Now())
		}},
		{Name: "reconcile", Every: time.Minute, Run: rec.RunDue},
		{Name: "prune-events", Every: time.Hour, Run: func(ctx context.Context) error {
			_, err := rc.Prune(ctx, cfg.EventRetention)
			return err
		}},
		{Name: "prune-sessions", Every: 10 * time.Minute, Run: func(ctx context.Context) error {
			_, err := models.PruneSessions(db.WithContext(ctx), clk.Now(), cfg.Session.IdleTimeout)
			return err
		}},
	}
}

// alertTasks checks the alert rules once per period across the instances,
// and delivers the notifications on every instance (each claimed by one),
// to channels by name.
func alertTasks(db *gorm.DB, cfg config.Alerts, clk clock.Clock, log *slog.Logger, reg prometheus.Registerer,
	channels map[string]notify.Channel) (*alerts.Alerts, []schedule.Task, error) {
	a := alerts.New(db, cfg, channels, clk, log)
	if err := a.RegisterMetrics(reg); err != nil {
		return nil, nil, err
	}
	return a, []schedule.Task{
		{Name: "check-alerts", Every: cfg.WithDefaults().Every, Run: a.Check},
		{Name: "deliver-alerts", Every: 5 * time.Second, EveryInstance: true, Run: a.Deliver},
	}, nil
}

// taskNames are the names of ts, for the alerts' task_failing rule.
func taskNames(ts []schedule.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// newLogger is the process log: every line goes through the redactor, and a
// repeated warning or error is written once per interval with its count (the
// returned func writes the counts still pending, at a stop).
func newLogger(cfg config.Log, w io.Writer, r *redact.Redactor) (*slog.Logger, func()) {
	opts := &slog.HandlerOptions{Level: slog.Level(cfg.SlogLevel())}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	dedup := logdedup.New(redact.NewHandler(h, r), logdedup.Options{Vary: []string{"took", "ip", "request_id"}})
	return slog.New(dedup), dedup.Flush
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
