// Package outbox pushes records to external services without ever creating a
// duplicate: it queues links, claims due ones under a lease, sends them
// (update, or look up then create with a stable idempotency key), classifies
// what came back, and retries, gives up or finishes accordingly.
package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Connector is what the engine needs of a service. connector.HTTP is the
// real one; tests wrap it to inject panics.
type Connector interface {
	Create(ctx context.Context, rec connector.Record, idemKey string) connector.Call
	Update(ctx context.Context, rec connector.Record) connector.Call
	Upsert(ctx context.Context, rec connector.Record) connector.Call
	Lookup(ctx context.Context, localType, key string) connector.Call
	Delete(ctx context.Context, rec connector.Record) connector.Call
	CanLookup(localType string) bool
	CanUpsert(localType string) bool
	CanDelete(localType string) bool
}

// Service is a configured service with its connector.
type Service struct {
	Name   string
	Config config.Service
	Conn   Connector
}

// Options tune the engine; zero values take the defaults.
type Options struct {
	Concurrency int           // sends in flight at once (default 64)
	BatchSize   int           // most links claimed per transaction (default 2×Concurrency)
	Lease       time.Duration // how long a claim is held before it can be rescued (default 2×slowest timeout + 30 s; at least 2×slowest + 10 s)
	Poll        time.Duration // idle wait between claims when nothing is due (default 1 s)
	Hold        time.Duration // how long a "Sync now" request holds its in-progress row (default Lease)
	Grace       time.Duration // at a stop, how long sends in flight may finish (default 10 s)
	WorkerID    string        // default host-pid-random
	// Registry receives the engine's Prometheus metrics; nil keeps them unregistered.
	Registry prometheus.Registerer
	// Redactor masks what the engine writes in its own words (a connector's
	// panic); default: the built-in fields and patterns.
	Redactor *redact.Redactor
	// Tracer makes a span of each call a send makes (see trace.go); nil
	// makes none.
	Tracer trace.TracerProvider
}

// Engine sends links. One per process; several processes may share a Postgres.
type Engine struct {
	db       *gorm.DB
	services map[string]Service
	routes   map[string][]string // local type → services
	clock    clock.Clock
	log      *slog.Logger
	opts     Options
	paused   func() []string
	breaker  Breaker
	metrics  *metrics
	tracer   trace.Tracer

	mu   sync.Mutex
	rnd  *rand.Rand
	seq  int64
	wake chan struct{}
}

// New builds an engine over the given services.
func New(db *gorm.DB, services []Service, clk clock.Clock, log *slog.Logger, opts Options) *Engine {
	e := &Engine{db: db, services: map[string]Service{}, routes: map[string][]string{}, clock: clk, log: log,
		rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed)), wake: make(chan struct{}, 1),
		paused: func() []string { return nil }}
	slowest := time.Duration(0)
	for _, s := range services {
		e.services[s.Name] = s
		for typ := range s.Config.Objects {
			e.routes[typ] = append(e.routes[typ], s.Name)
		}
		slowest = max(slowest, s.Config.Timeout)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 64
	}
	if opts.BatchSize <= 0 {
		// Twice the sends in flight: a claim of more links costs the
		// database little more than one of fewer, and on Postgres the
		// engine's one claimer is what its rate waits on.
		opts.BatchSize = 2 * opts.Concurrency
	}
	if opts.Lease <= 0 {
		opts.Lease = 2*slowest + 30*time.Second
	}
	// A sender starts a job only while its lease covers the longest send
	// (leaseCovers): a shorter lease would hand every job back unsent.
	opts.Lease = max(opts.Lease, 2*slowest+2*leaseSpare)
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Hold <= 0 {
		opts.Hold = opts.Lease
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New(nil)
	}
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	if opts.WorkerID == "" {
		host, _ := os.Hostname()
		opts.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), models.NewSecret(3))
	}
	if opts.Tracer == nil {
		opts.Tracer = noop.NewTracerProvider()
	}
	e.opts = opts
	e.metrics = newMetrics(opts.Registry, db)
	e.tracer = opts.Tracer.Tracer("github.com/syncdesk/syncdesk/sync/outbox")
	return e
}

// SetRand replaces the jitter source (tests make it deterministic).
func (e *Engine) SetRand(r *rand.Rand) { e.mu.Lock(); e.rnd = r; e.mu.Unlock() }

// SetPaused tells the engine which services not to claim, asked at each claim.
func (e *Engine) SetPaused(f func() []string) { e.paused = f }

// Breaker pauses a service whose provider fails, and probes it while it is
// paused (sync/services.Breakers is the real one).
type Breaker interface {
	// Record counts a call and reports whether the service's breaker is
	// open: the call's failure then uses up none of its link's attempts.
	Record(ctx context.Context, service string, c connector.Call) (open bool)
	// Probes names the paused services this engine sends a probe to now.
	Probes(ctx context.Context) []string
	// ProbeDone takes a probe's call and reports whether it resumed the service.
	ProbeDone(ctx context.Context, service string, c connector.Call) (resumed bool)
}

// SetBreaker gives the engine the services' circuit breakers; set it
// before the engine runs.
func (e *Engine) SetBreaker(b Breaker) { e.breaker = b }

// WorkerID names this engine in leases and the attempt log.
func (e *Engine) WorkerID() string { return e.opts.WorkerID }

func (e *Engine) jitter() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rnd.Float64()
}

// leaseToken is unique per claim, so that a compare-and-set on it can tell
// this claim from a later one of the same link by the same worker.
func (e *Engine) leaseToken() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	return fmt.Sprintf("%s/%d", e.opts.WorkerID, e.seq)
}

// poke wakes the run loop early: something became due.
func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
