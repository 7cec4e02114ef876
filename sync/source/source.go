// Package source reads business databases into records: a transactional
// outbox table the application writes in the same transaction as its own
// change, or a change query over one of its tables (README "Sources"). Each
// batch's records and the cursor they move commit in one transaction of
// syncdesk's database, so that a crash anywhere neither skips a row nor
// applies one twice; a source is read by one instance at a time, as a
// shared task of sync/schedule.
package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/schedule"
)

// Options are what every source shares.
type Options struct {
	Clock    clock.Clock      // default the wall clock
	Log      *slog.Logger     // default slog.Default()
	Redactor *redact.Redactor // cleans the errors kept for the page; default the built-in rules
}

// Source reads one configured business database. Safe for concurrent use,
// though the schedule runs its Drain on one instance at a time.
type Source struct {
	name   string
	cfg    config.Source
	zone   *time.Location // cfg's time_zone: the wall clock of a change query's updated_at
	biz    *sql.DB        // the business database
	db     *gorm.DB
	engine *outbox.Engine
	opts   Options

	mu        sync.Mutex
	gap       gap       // the outbox id waited for, if any
	untimedAt time.Time // when rows without updated_at were last counted
}

// New opens a source (the business database's pool, which connects only
// when first used) and gives it its cursor row; a cursor that has read
// another table or query under this name stops it, naming the setting.
func New(ctx context.Context, name string, cfg config.Source, db *gorm.DB, eng *outbox.Engine, opts Options) (*Source, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New(nil)
	}
	opts.Redactor.AddSecrets(cfg.Secrets()...)
	zone, err := cfg.Zone() // checked with the configuration; loaded once, not at every drain
	if err != nil {
		return nil, fmt.Errorf("source %s: setting time_zone: %w", name, err)
	}
	biz, err := open(cfg, opts.Log)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", name, err)
	}
	s := &Source{name: name, cfg: cfg, zone: zone, biz: biz, db: db, engine: eng, opts: opts}
	if err := models.EnsureSourceCursor(db.WithContext(ctx), name); err != nil {
		_ = biz.Close()
		return nil, err
	}
	if _, err := s.claim(ctx); err != nil {
		_ = biz.Close()
		return nil, err
	}
	return s, nil
}

// open makes the business database's pool. Times are read and sent in
// UTC whatever the DSN says (MySQL's parseTime; Postgres's session time
// zone, which a timestamp without time zone is converted through), so that
// a change query's cursor means the same instant when it is sent back.
func open(cfg config.Source, log *slog.Logger) (*sql.DB, error) {
	dsn := cfg.ExpandedDSN()
	if cfg.Driver != "mysql" {
		pc, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, errors.New("the postgres DSN cannot be read") // not err: it may quote the DSN
		}
		pc.RuntimeParams["timezone"] = "UTC"
		return stdlib.OpenDB(*pc), nil
	}
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, errors.New("the mysql DSN cannot be read") // not err: it may quote the DSN
	}
	mc.ParseTime, mc.Loc, mc.Logger = true, time.UTC, driverLog{log}
	// Loc only says how the driver reads and writes times; a TIMESTAMP
	// column is converted through the session's zone, so that is UTC too.
	if mc.Params == nil {
		mc.Params = map[string]string{}
	}
	mc.Params["time_zone"] = "'+00:00'"
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, errors.New("the mysql DSN cannot be used")
	}
	return sql.OpenDB(conn), nil
}

// driverLog takes the MySQL driver's own messages (a connection dropped
// mid-read…) into syncdesk's log, which redacts and formats every line,
// instead of the driver's default, the standard logger.
type driverLog struct{ log *slog.Logger }

func (d driverLog) Print(v ...any) { d.log.Warn("mysql driver: " + fmt.Sprint(v...)) }

// Name is the source's name in the configuration.
func (s *Source) Name() string { return s.name }

// Close closes the business database's pool.
func (s *Source) Close() error { return s.biz.Close() }

// TaskName is the name of a source's task on the schedule.
func TaskName(source string) string { return "source-" + source }

// Task is the source's row in the task table: a drain every poll, on one
// instance at a time across the cluster (its lease is the schedule's).
func (s *Source) Task() schedule.Task {
	return schedule.Task{Name: TaskName(s.name), Every: s.cfg.Poll, Run: s.Drain, StartNow: true}
}

// Drain reads the source batch by batch until it has caught up, is paused,
// waits on a gap, or ctx ends. A failure is recorded on the source's row
// for the page, redacted, and returned.
func (s *Source) Drain(ctx context.Context) error {
	err := s.drain(ctx)
	if err == nil || ctx.Err() != nil {
		return err
	}
	why := s.opts.Redactor.TextPrefix(err.Error(), maxErrorText)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if rerr := models.SourceFailed(s.db.WithContext(wctx), s.name, why, s.opts.Clock.Now()); rerr != nil {
		s.opts.Log.Warn("source: cannot record a failure", "source", s.name, "err", rerr)
	}
	return errors.New(why)
}

// maxErrorText bounds the error kept for the page.
const maxErrorText = 2000

func (s *Source) drain(ctx context.Context) error {
	// Claimed again on every drain: another instance, configured otherwise,
	// may have given a fresh cursor its own table or query since the start.
	cur, err := s.claim(ctx)
	if err != nil || cur.Paused() {
		return err
	}
	r := s.reader(cur)
	for {
		b, err := r.next(ctx)
		if err != nil {
			return fmt.Errorf("read source %s: %w", s.name, err)
		}
		if err := s.apply(ctx, cur, b); err != nil {
			return err
		}
		if b.stop {
			return nil
		}
		if cur, err = models.GetSourceCursor(s.db.WithContext(ctx), s.name); err != nil || cur.Paused() {
			return err
		}
		r.moved(cur)
	}
}

// deadline gives one read of the business database read_timeout to end,
// so that a read that hangs (a lock held, a plan gone bad) does not leave
// the source "reading" for ever: it becomes the source's last error, and
// the next poll tries again. done cancels the read's context and, when the
// deadline is what ended the read, says so in words.
func (s *Source) deadline(ctx context.Context) (rctx context.Context, done func(error) error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.ReadTimeout)
	return rctx, func(err error) error {
		defer cancel()
		if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the read took longer than %s and was abandoned", s.cfg.ReadTimeout)
		}
		return err
	}
}

// reader reads a source's rows from a cursor, one batch at a time.
type reader interface {
	next(ctx context.Context) (batch, error)
	moved(cur models.SourceCursor) // the cursor as the last batch committed it
}

func (s *Source) reader(cur models.SourceCursor) reader {
	if s.cfg.OutboxMode() {
		return &tableReader{s: s, cur: cur}
	}
	return newChangeReader(s, cur)
}
