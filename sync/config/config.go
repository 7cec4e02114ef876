// Package config is syncdesk's one configuration struct: defaults, an
// optional YAML file, environment variables and flags, in that order of
// precedence (flags win), validated once at start.
package config

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/syncdesk/syncdesk/models/dsn"
	"gopkg.in/yaml.v3"
)

// Config is everything syncdesk can be told.
type Config struct {
	// Addr is the host:port the server listens on.
	Addr string `yaml:"addr"`
	// DB is sqlite:PATH or a postgres:// URL.
	DB string `yaml:"db"`
	// ShutdownTimeout bounds how long a stop waits for in-flight work.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// TrustedProxies are the CIDR ranges whose X-Forwarded-For is believed
	// when telling a client's IP; empty means the socket's peer address.
	TrustedProxies []string `yaml:"trusted_proxies"`
	TLS            TLS      `yaml:"tls"`
	Log            Log      `yaml:"log"`
	Session        Session  `yaml:"session"`
	Login          Login    `yaml:"login"`
	// Services are the external systems records are pushed to, by name.
	Services map[string]Service `yaml:"services"`
	// Sources are business databases whose outbox (or change query) is
	// read into records, by name (README "Sources").
	Sources map[string]Source `yaml:"sources"`
	// Redact lists extra JSON fields masked in logs and the attempt log, on
	// top of the built-in ones (password, token, secret, card_number, …).
	Redact []string `yaml:"redact"`
	// AttemptRetention is how long the attempt log is kept.
	AttemptRetention time.Duration `yaml:"attempt_retention"`
	// EventRetention is how long processed webhook events are kept: at least
	// the longest provider re-send window, so a late re-delivery is still
	// recognised as a duplicate.
	EventRetention time.Duration `yaml:"event_retention"`
	Metrics        Metrics       `yaml:"metrics"`
	// Alerts notify people of incidents (README "Alerts").
	Alerts Alerts `yaml:"alerts"`
	// Tracing sends OpenTelemetry traces; off by default (README "Tracing").
	Tracing Tracing `yaml:"tracing"`
	// Demo starts the sandbox providers and seeds records; on by default
	// when no config file and no services are given.
	Demo bool `yaml:"demo"`
}

// TLS makes the server speak HTTPS itself; cookies are then Secure.
type TLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Log shapes the process log.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// Session bounds how long a sign-in lasts.
type Session struct {
	IdleTimeout     time.Duration `yaml:"idle_timeout"`
	AbsoluteTimeout time.Duration `yaml:"absolute_timeout"`
}

// Login throttles password guessing.
type Login struct {
	// MaxFailures per account within Window locks that account until the
	// window has passed, whichever IP the next try comes from.
	MaxFailures int `yaml:"max_failures"`
	// MaxFailuresPerIP within Window locks out one client IP.
	MaxFailuresPerIP int           `yaml:"max_failures_per_ip"`
	Window           time.Duration `yaml:"window"`
}

// Metrics says who may read /metrics.
type Metrics struct {
	// Access is closed (no /metrics), open (anyone who reaches the port) or
	// token (Authorization: Bearer Token).
	Access string `yaml:"access"`
	// Token, for access: token; ${VAR} is read from the environment.
	Token string `yaml:"token"`
}

// Default returns the configuration used when nothing is said.
func Default() Config {
	return Config{
		Addr:            "127.0.0.1:8080",
		DB:              "sqlite:./syncdesk.db",
		ShutdownTimeout: 3 * time.Second,
		Log:             Log{Level: "info", Format: "text"},
		Session:         Session{IdleTimeout: 8 * time.Hour, AbsoluteTimeout: 7 * 24 * time.Hour},
		Login:           Login{MaxFailures: 10, MaxFailuresPerIP: 50, Window: 15 * time.Minute},

		AttemptRetention: 30 * 24 * time.Hour,
		EventRetention:   30 * 24 * time.Hour,
		Metrics:          Metrics{Access: "closed"},
		Tracing:          DefaultTracing(),
	}
}

// Overrides are the values given by flags or environment variables; an empty
// string means "not given".
type Overrides struct {
	Addr, DB string
}

// Load reads the configuration and completes it: the one path for a
// command that has nothing to add to it.
func Load(path string, flags Overrides) (Config, error) {
	cfg, err := Read(path, flags)
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Complete()
}

// Read builds the configuration as given, not yet completed: defaults, then
// the YAML file at path (if any), then the environment's SYNCDESK_ADDR and
// SYNCDESK_DB, then flags. With no file and no services it is the demo,
// whose services the caller adds before Complete.
func Read(path string, flags Overrides) (Config, error) {
	cfg := Default()
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return cfg, fmt.Errorf("config: %w", err)
		}
		defer f.Close()
		if err := decode(f, &cfg); err != nil {
			return cfg, fmt.Errorf("config %s: %w", path, err)
		}
	}
	for _, o := range []Overrides{{Addr: os.Getenv("SYNCDESK_ADDR"), DB: os.Getenv("SYNCDESK_DB")}, flags} {
		if o.Addr != "" {
			cfg.Addr = o.Addr
		}
		if o.DB != "" {
			cfg.DB = o.DB
		}
	}
	if cfg.Demo && len(cfg.Services) > 0 {
		return cfg, errors.New("setting demo: true runs the sandbox providers in place of the configured services; " +
			"remove demo, or the services")
	}
	if path == "" && len(cfg.Services) == 0 {
		cfg.Demo = true // `go run .` with nothing configured shows the product working
	}
	return cfg, nil
}

// Complete fills in what services left unsaid, then validates every
// setting. Every configuration goes through it once, the demo's too.
func (c *Config) Complete() error {
	for name, svc := range c.Services {
		svc.applyDefaults()
		c.Services[name] = svc
	}
	for name, src := range c.Sources {
		src.applyDefaults()
		c.Sources[name] = src
	}
	return c.Validate()
}

func decode(r io.Reader, cfg *Config) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	// The file as written first, so that a misspelt setting is reported
	// at its own line; then with its presets expanded, for real.
	if err := strictDecode(body, &Config{}); err != nil {
		return err
	}
	expanded, err := withPresets(body)
	if err != nil {
		return err
	}
	return strictDecode(expanded, cfg)
}

func strictDecode(body []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(body))
	dec.KnownFields(true) // a misspelt setting is an error, not a silent default
	return nameSettings(body, dec.Decode(cfg))
}

// Validate checks every setting and names each bad one, so that one start
// reports all the mistakes in a file, not one per try.
func (c Config) Validate() error {
	var errs []error
	bad := func(setting, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting %s: %s", setting, fmt.Sprintf(format, a...)))
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		bad("addr", "%q is not host:port (e.g. 127.0.0.1:8080)", c.Addr)
	}
	if _, _, err := dsn.Parse(c.DB); err != nil {
		bad("db", "%v", err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"shutdown_timeout", c.ShutdownTimeout}, {"session.idle_timeout", c.Session.IdleTimeout},
		{"session.absolute_timeout", c.Session.AbsoluteTimeout}, {"login.window", c.Login.Window},
		{"attempt_retention", c.AttemptRetention}, {"event_retention", c.EventRetention}} {
		if d.v <= 0 {
			bad(d.name, "must be a positive duration such as 30s or 8h, got %v", d.v)
		}
	}
	if c.Login.MaxFailures < 1 {
		bad("login.max_failures", "must be at least 1, got %d", c.Login.MaxFailures)
	}
	if c.Login.MaxFailuresPerIP < 1 {
		bad("login.max_failures_per_ip", "must be at least 1, got %d", c.Login.MaxFailuresPerIP)
	}
	for _, p := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			bad("trusted_proxies", "%q is not a CIDR range such as 10.0.0.0/8", p)
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls", "cert_file and key_file go together")
	} else if c.TLS.CertFile != "" {
		// Read now, not when the server starts listening: by then the
		// engine is sending, and the start has said it is running.
		if _, err := tls.LoadX509KeyPair(c.TLS.CertFile, c.TLS.KeyFile); err != nil {
			bad("tls", "cert_file and key_file do not load as a certificate and its key: %v", err)
		}
	}
	if _, err := c.Log.level(); err != nil {
		bad("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		bad("log.format", "%q is not text or json", c.Log.Format)
	}
	switch c.Metrics.Access {
	case "closed", "open":
	case "token":
		if tok, missing := ExpandEnv(c.Metrics.Token); tok == "" || len(missing) > 0 {
			bad("metrics.token", "access: token needs a token (set it, or the environment variable it names)")
		}
	default:
		bad("metrics.access", "%q is not closed, open or token", c.Metrics.Access)
	}
	for _, name := range c.ServiceNames() {
		errs = append(errs, c.Services[name].validate(name)...)
	}
	for _, name := range c.SourceNames() {
		errs = append(errs, c.Sources[name].validate(name, c.Services)...)
	}
	errs = append(errs, c.Alerts.validate()...)
	errs = append(errs, c.Tracing.validate()...)
	return errors.Join(errs...)
}

// SlogLevel returns the configured log level for log/slog; Validate has
// refused a level it cannot read.
func (l Log) SlogLevel() slog.Level {
	lv, _ := l.level()
	return lv
}

// level reads the level as log/slog names them (debug, info, warn, error,
// in any case).
func (l Log) level() (slog.Level, error) {
	var lv slog.Level
	err := lv.UnmarshalText([]byte(l.Level))
	return lv, err
}
