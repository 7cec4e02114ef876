// Package web serves syncdesk's dashboard, JSON API and health endpoints with Echo.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/reconcile"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/schedule"
	"github.com/syncdesk/syncdesk/sync/services"
	"github.com/syncdesk/syncdesk/sync/source"
)

// Deps is what the web layer is given at start.
type Deps struct {
	DB      *gorm.DB
	Config  config.Config
	Clock   clock.Clock
	Log     *slog.Logger
	Version string
	// Redactor masks secrets in payloads shown on pages.
	Redactor *redact.Redactor
	// Outbox is the sending engine the API and the pages ask to sync.
	Outbox *outbox.Engine
	// Inbox receives webhooks at /hooks/{service}.
	Inbox *inbox.Receiver
	// Metrics is served at /metrics when config metrics.access allows.
	Metrics prometheus.Gatherer
	// Pauser pauses and resumes sending per service; nil hides the switch.
	Pauser *services.Pauser
	// Scheduler runs the background tasks the schedules page shows.
	Scheduler *schedule.Scheduler
	// Reconciler runs reconciliations from the reconciliation pages; nil hides the start form.
	Reconciler *reconcile.Reconciler
	// Tracer makes a span of each request (web/tracing.go); nil makes none.
	Tracer trace.TracerProvider
	// Sources are the business databases read into records, shown on the
	// services page; nil when none is configured.
	Sources *source.Set
}

// Server is the HTTP face of syncdesk.
type Server struct {
	db      *gorm.DB
	cfg     config.Config
	clock   clock.Clock
	log     *slog.Logger
	version string
	redact  *redact.Redactor
	outbox  *outbox.Engine
	inbox   *inbox.Receiver
	metrics prometheus.Gatherer
	pauser  *services.Pauser
	alerts  openAlerts
	sched   *schedule.Scheduler
	rec     *reconcile.Reconciler
	sources *source.Set
	echo    *echo.Echo
	handler http.Handler // echo, traced when Deps.Tracer is set
	// signIns hands out the password checks: a few shared by strangers,
	// a few of their own for browsers that signed in before.
	signIns *signInGate
	proxies []netip.Prefix // config.TrustedProxies
	written writeProof     // when /readyz last proved a write
}

// New builds the server with every route registered.
func New(d Deps) (*Server, error) {
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Redactor == nil {
		d.Redactor = redact.New(nil)
	}
	s := &Server{db: d.DB, cfg: d.Config, clock: d.Clock, log: d.Log, version: d.Version, redact: d.Redactor, outbox: d.Outbox, inbox: d.Inbox, metrics: d.Metrics, pauser: d.Pauser, sched: d.Scheduler, rec: d.Reconciler, sources: d.Sources, echo: echo.New(),
		signIns: newSignInGate()}
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.echo.HTTPErrorHandler = s.handleError
	for _, p := range d.Config.TrustedProxies {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", p, err)
		}
		s.proxies = append(s.proxies, prefix)
	}
	s.echo.IPExtractor = ipExtractor(s.proxies)
	if err := s.routes(); err != nil {
		return nil, err
	}
	s.handler = traced(s.echo, d.Tracer)
	return s, nil
}

// requestDB is the database as a request's queries see it: under the
// request's context, so that a client that goes away cancels the queries it
// left running. Every query a handler or a middleware makes goes through it,
// or through detachedDB.
func (s *Server) requestDB(c echo.Context) *gorm.DB {
	return s.db.WithContext(c.Request().Context())
}

// detachedDB is the database for a write that must land even when the
// client has gone away: the record of what a request did (an audit entry)
// or the follow-up of an action already taken. It keeps the request's
// values but not its cancellation. Each caller says why it needs it.
func (s *Server) detachedDB(c echo.Context) *gorm.DB {
	return s.db.WithContext(context.WithoutCancel(c.Request().Context()))
}

// Handler returns the server as an http.Handler (tests serve it with httptest).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve listens on the configured address until ctx ends, then shuts down
// gracefully within the configured timeout. ready, when not nil, receives the
// bound address once the listener is open.
func (s *Server) Serve(ctx context.Context, ready func(addr string)) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() {
		if s.cfg.TLS.CertFile != "" {
			errc <- srv.ServeTLS(ln, s.cfg.TLS.CertFile, s.cfg.TLS.KeyFile)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut down: %w", err)
	}
	_ = srv.Close()
	return nil
}

// ipExtractor trusts X-Forwarded-For only from configured proxies; by default
// the client IP is the socket's peer, so a client cannot pick its own IP to
// dodge login throttling.
func ipExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		_, ipnet, _ := net.ParseCIDR(p.String())
		opts = append(opts, echo.TrustIPRange(ipnet))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// overTLS reports whether the browser's connection is encrypted: to this
// server, or to a trusted proxy that says so in X-Forwarded-Proto. Cookies
// are Secure and HSTS is sent on either; a client that is not a trusted
// proxy cannot claim it.
func (s *Server) overTLS(c echo.Context) bool {
	if c.IsTLS() {
		return true
	}
	r := c.Request()
	if len(s.proxies) == 0 || !strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		return false
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	for _, p := range s.proxies {
		if p.Contains(peer.Addr().Unmap()) {
			return true
		}
	}
	return false
}
