package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time_zone names load where the machine has no zone database

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// Source is a business database syncdesk reads records from (README
// "Sources"): its transactional outbox table, or a change query over one of
// its tables.
type Source struct {
	// Driver is postgres or mysql (MySQL and MariaDB).
	Driver string `yaml:"driver"`
	// DSN is a postgres:// URL or key=value string, or a MySQL DSN
	// (user:password@tcp(host:3306)/db); ${VAR} is read from the environment.
	DSN string `yaml:"dsn"`
	// Table is the outbox table (outbox mode); Query the change query
	// (change-query mode). Exactly one is given.
	Table string `yaml:"table"`
	// Columns names the outbox table's columns.
	Columns OutboxColumns `yaml:"columns"`
	// Types maps a row's type to the local type of its record; a type not
	// listed is taken as it is.
	Types map[string]string `yaml:"types"`
	// Query selects id, updated_at and payload from a business table; its
	// rows are records of Type.
	Query string `yaml:"query"`
	Type  string `yaml:"type"`
	// RereadWindow is how far behind the business database's clock the
	// change query's cursor stays, for transactions that commit late.
	RereadWindow time.Duration `yaml:"reread_window"`
	// TimeZone is the zone whose wall clock the change query's updated_at
	// holds when it carries no zone of its own (a Postgres timestamp, a
	// MySQL DATETIME written with NOW() on a server that is not on UTC);
	// unset, UTC. The cursor's safe point is read on that clock.
	TimeZone string `yaml:"time_zone"`
	// BatchSize is how many rows one transaction reads and stores.
	BatchSize int `yaml:"batch_size"`
	// Poll is how often a source that was caught up is read again.
	Poll time.Duration `yaml:"poll"`
	// GapTimeout is how long a missing outbox id is waited for (a
	// transaction that took it may commit late) before it is skipped.
	GapTimeout time.Duration `yaml:"gap_timeout"`
	// ReadTimeout bounds each read of the business database: a read that
	// hangs (a lock, a slow plan) is abandoned, said as the source's last
	// error, and tried again at the next poll.
	ReadTimeout time.Duration `yaml:"read_timeout"`

	otherMode []string // settings given that belong to the other mode (applyDefaults)
}

// OutboxColumns are the outbox table's column names; Op "none" means the
// table has no operation column (every row is an upsert).
type OutboxColumns struct {
	ID      string `yaml:"id"`
	Type    string `yaml:"type"`
	LocalID string `yaml:"local_id"`
	Payload string `yaml:"payload"`
	Op      string `yaml:"op"`
}

// NoOp is the Columns.Op that says the outbox table has no operation column.
const NoOp = "none"

// Source defaults.
const (
	DefaultSourceBatch = 500
	MaxSourceBatch     = 1000 // outbox.MaxBatch: one batch is one ApplyBatch
	DefaultReadTimeout = time.Minute
)

// OutboxMode reports whether the source reads an outbox table (else a change query).
func (s Source) OutboxMode() bool { return s.Table != "" }

// LocalType is the local type of a row of type typ.
func (s Source) LocalType(typ string) string {
	if lt, ok := s.Types[typ]; ok {
		return lt
	}
	return typ
}

// ExpandedDSN is the DSN with ${VAR} replaced from the environment. Keep
// the result in memory only.
func (s Source) ExpandedDSN() string {
	v, _ := ExpandEnv(s.DSN)
	return v
}

// Where says where the source is without its credentials: the driver, the
// host and the database, for pages and logs.
func (s Source) Where() string {
	dsn := s.ExpandedDSN()
	switch s.Driver {
	case "mysql":
		if c, err := mysql.ParseDSN(dsn); err == nil {
			return fmt.Sprintf("mysql %s/%s", c.Addr, c.DBName)
		}
	case "postgres":
		if c, err := pgx.ParseConfig(dsn); err == nil {
			return fmt.Sprintf("postgres %s:%d/%s", c.Host, c.Port, c.Database)
		}
	}
	return s.Driver
}

// Secrets are the DSN expanded, each ${VAR}'s value, and the password, for
// the redactor to mask.
func (s Source) Secrets() []string {
	out := secretPieces(s.DSN)
	dsn := s.ExpandedDSN()
	switch s.Driver {
	case "mysql":
		if c, err := mysql.ParseDSN(dsn); err == nil && c.Passwd != "" {
			out = append(out, c.Passwd)
		}
	case "postgres":
		if c, err := pgx.ParseConfig(dsn); err == nil && c.Password != "" {
			out = append(out, c.Password)
		}
	}
	return out
}

func (s *Source) applyDefaults() {
	// A setting of the other mode would be taken and do nothing: noted
	// here, before the defaults fill them, for validate to refuse.
	s.otherMode = nil
	if s.Query != "" {
		if len(s.Types) > 0 {
			s.otherMode = append(s.otherMode, "types")
		}
		if s.Columns != (OutboxColumns{}) {
			s.otherMode = append(s.otherMode, "columns")
		}
		if s.GapTimeout != 0 {
			s.otherMode = append(s.otherMode, "gap_timeout")
		}
	} else {
		if s.RereadWindow != 0 {
			s.otherMode = append(s.otherMode, "reread_window")
		}
		if s.TimeZone != "" {
			s.otherMode = append(s.otherMode, "time_zone")
		}
	}
	if s.BatchSize == 0 {
		s.BatchSize = DefaultSourceBatch
	}
	if s.Poll == 0 {
		s.Poll = time.Second
	}
	if s.GapTimeout == 0 {
		s.GapTimeout = 30 * time.Second
	}
	if s.ReadTimeout == 0 {
		s.ReadTimeout = DefaultReadTimeout
	}
	if s.Query != "" && s.RereadWindow == 0 {
		s.RereadWindow = time.Minute
	}
	c := &s.Columns
	for _, f := range []struct {
		v   *string
		def string
	}{{&c.ID, "id"}, {&c.Type, "type"}, {&c.LocalID, "local_id"},
		{&c.Payload, "payload"}, {&c.Op, "op"}} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
}

// sqlName is a table or column name syncdesk writes into SQL as it is:
// letters, digits and _, with a schema before a dot.
var sqlName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$`)

func (s Source) validate(name string, services map[string]Service) []error {
	var errs []error
	bad := func(setting, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting sources.%s.%s: %s", name, setting, fmt.Sprintf(format, a...)))
	}
	if !serviceName.MatchString(name) {
		bad("", "a source name is lower-case letters, digits, - and _ (got %q)", name)
	}
	s.validateDSN(bad)
	for _, setting := range s.otherMode {
		if s.Query != "" {
			bad(setting, "is for an outbox table (table:); a change query does not use it")
		} else {
			bad(setting, "is for a change query (query:); an outbox table does not use it")
		}
	}
	switch {
	case (s.Table == "") == (s.Query == ""):
		bad("table", "give either table (an outbox table) or query (a change query), not both nor neither")
	case s.OutboxMode():
		s.validateOutbox(bad)
	default:
		s.validateQuery(bad, services)
	}
	if s.BatchSize < 1 || s.BatchSize > MaxSourceBatch {
		bad("batch_size", "must be 1 to %d, got %d", MaxSourceBatch, s.BatchSize)
	}
	for setting, d := range map[string]time.Duration{"poll": s.Poll, "gap_timeout": s.GapTimeout, "read_timeout": s.ReadTimeout} {
		if d <= 0 {
			bad(setting, "must be a positive duration such as 1s, got %v", d)
		}
	}
	if s.RereadWindow < 0 {
		bad("reread_window", "must be a positive duration such as 1m (unset or 0: 1m), got %v", s.RereadWindow)
	}
	if _, err := s.Zone(); err != nil {
		bad("time_zone", "%q is not a time zone: give a name such as Europe/Kyiv or America/New_York (unset: UTC)", s.TimeZone)
	}
	return errs
}

// Zone is the location of TimeZone: UTC when it is unset.
func (s Source) Zone() (*time.Location, error) {
	if s.TimeZone == "" {
		return time.UTC, nil
	}
	// Local is this machine's zone, which says nothing of the business
	// database's.
	if s.TimeZone == "Local" {
		return nil, errors.New("the zone named Local is this machine's, not a zone name")
	}
	return time.LoadLocation(s.TimeZone)
}

// validateDSN checks the DSN without ever quoting it: it holds a password.
func (s Source) validateDSN(bad func(setting, format string, a ...any)) {
	dsn, missing := ExpandEnv(s.DSN)
	switch {
	case len(missing) > 0:
		bad("dsn", "names environment variables that are not set: %s", strings.Join(missing, ", "))
	case s.DSN == "":
		bad("dsn", "is required")
	case s.Driver == "postgres":
		if _, err := pgx.ParseConfig(dsn); err != nil {
			bad("dsn", "is not a postgres:// URL nor a key=value connection string (not shown: it may hold a password)")
		}
	case s.Driver == "mysql":
		if _, err := mysql.ParseDSN(dsn); err != nil {
			bad("dsn", "is not a MySQL DSN such as user:password@tcp(host:3306)/db (not shown: it may hold a password)")
		}
	}
	if s.Driver != "postgres" && s.Driver != "mysql" {
		bad("driver", "%q is not postgres or mysql (MySQL and MariaDB)", s.Driver)
	}
}

func (s Source) validateOutbox(bad func(setting, format string, a ...any)) {
	if !sqlName.MatchString(s.Table) {
		bad("table", "%q is not a table name (letters, digits and _, with schema. before it if need be)", s.Table)
	}
	c := s.Columns
	for setting, v := range map[string]string{"id": c.ID, "type": c.Type, "local_id": c.LocalID, "payload": c.Payload, "op": c.Op} {
		if !sqlName.MatchString(v) || strings.Contains(v, ".") {
			bad("columns."+setting, "%q is not a column name (letters, digits and _)", v)
		}
	}
	if s.Type != "" {
		bad("type", "is for a change query; an outbox row names its own type (map it with types)")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Types)) {
		if s.Types[k] == "" {
			bad("types."+k, "names no local type")
		}
	}
}

func (s Source) validateQuery(bad func(setting, format string, a ...any), services map[string]Service) {
	q := strings.TrimSpace(s.Query)
	if !strings.HasPrefix(strings.ToLower(q), "select") || strings.Contains(q, ";") {
		bad("query", "must be one SELECT, without a semicolon, giving the columns id, updated_at and payload")
	}
	routed := false
	for _, svc := range services {
		_, ok := svc.Objects[s.Type]
		routed = routed || ok
	}
	switch {
	case s.Type == "":
		bad("type", "a change query's rows need the local type of their records")
	case !routed:
		bad("type", "no service has objects of type %q: its records would go nowhere", s.Type)
	}
}

// SourceNames lists the configured sources in order.
func (c Config) SourceNames() []string { return slices.Sorted(maps.Keys(c.Sources)) }
