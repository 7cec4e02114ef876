package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/inbox/verify"
)

// A refused delivery is counted, never stored: a misconfigured secret must
// show on the pages, but a flood of forged requests must not become a
// flood of writes. Each service's refusals are counted in memory and
// written at most once every refusalWriteEvery: the first of a quiet
// period at once, before its answer, so that the pages show it when the
// sender has its 401; the ones after it in the next write.
const (
	refusalWriteEvery = time.Second
	// refusalWriteTimeout bounds one write: a forged request waits for
	// it at most this long, and a client going away does not cancel it.
	refusalWriteTimeout = 5 * time.Second
	// maxRefusalDetail bounds the reason in words that is kept.
	maxRefusalDetail = 300
)

// refusals is the Receiver's count of refused deliveries not yet written.
type refusals struct {
	mu      sync.Mutex
	by      map[string]*serviceRefusals
	closed  bool
	counter *prometheus.CounterVec // nil until RegisterMetrics

	// write serializes the writes, and a Flush behind the writes already
	// under way: each takes its counts only once it holds write, so when
	// Flush returns everything counted before it was called has landed.
	write sync.Mutex
}

// serviceRefusals is one service's count since its last write.
type serviceRefusals struct {
	pending   map[refusalKey]*refusalTally
	due       bool        // a write is under way or scheduled: new refusals fold into it or the next
	timer     *time.Timer // the scheduled write, nil when none
	lastWrite time.Time   // local monotonic time, for the pace only
}

// refusalKey is one row of webhook_refusals, within a service.
type refusalKey struct {
	reason string
	hour   time.Time
}

type refusalTally struct {
	n      int64
	lastAt time.Time
	detail string
}

// RegisterMetrics counts refused deliveries in syncdesk_webhooks_refused_total
// too: exact and at once, where the table is written at a pace. Call it
// before the receiver takes deliveries.
func (r *Receiver) RegisterMetrics(reg prometheus.Registerer) error {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "syncdesk_webhooks_refused_total",
		Help: "Webhook deliveries refused by service and reason (signature, timestamp, shape); their bodies are not kept."},
		[]string{"service", "reason"})
	if err := reg.Register(c); err != nil {
		return err
	}
	r.refused.mu.Lock()
	r.refused.counter = c
	r.refused.mu.Unlock()
	return nil
}

// refusalReason names why a delivery was refused: kind is ErrRejected or
// ErrBadEvent, cause what verify or the decoding said.
func refusalReason(kind, cause error) string {
	switch {
	case errors.Is(cause, verify.ErrStaleTimestamp):
		return models.RefusedTimestamp
	case kind == ErrRejected:
		return models.RefusedSignature
	}
	return models.RefusedShape
}

// refuse counts a refused delivery of service and returns the error its
// sender is answered with: kind (ErrRejected or ErrBadEvent), then cause.
// The count keeps cause's words, which name the check that failed and
// never a header's value or the body (verify's errors are written so);
// the configured secrets are masked in them all the same. ctx is the
// delivery's: the write, when this refusal makes one, outlives its
// cancellation.
func (r *Receiver) refuse(ctx context.Context, service string, kind, cause error) error {
	detail := cause.Error()
	if len(detail) > maxRefusalDetail {
		n := maxRefusalDetail
		for n > 0 && !utf8.RuneStart(detail[n]) {
			n--
		}
		detail = detail[:n] + "…"
	}
	detail = r.redact.Known(detail) // after the cut: it masks what the cut left of a secret too
	if r.countRefusal(service, refusalReason(kind, cause), r.clock.Now(), detail) {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refusalWriteTimeout)
		defer cancel()
		r.writeRefusals(wctx, service)
	}
	return fmt.Errorf("%w: %w", kind, cause)
}

// countRefusal adds one refusal to service's count and reports whether
// the caller writes it now; otherwise it waits for the write under way or
// scheduled, or one is scheduled for when the pace allows.
func (r *Receiver) countRefusal(service, reason string, at time.Time, detail string) bool {
	rf := &r.refused
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.counter != nil {
		rf.counter.WithLabelValues(service, reason).Inc()
	}
	if rf.by == nil {
		rf.by = map[string]*serviceRefusals{}
	}
	s := rf.by[service]
	if s == nil {
		s = &serviceRefusals{pending: map[refusalKey]*refusalTally{}}
		rf.by[service] = s
	}
	k := refusalKey{reason: reason, hour: at.UTC().Truncate(time.Hour)}
	t := s.pending[k]
	if t == nil {
		t = &refusalTally{}
		s.pending[k] = t
	}
	t.n++
	if !at.Before(t.lastAt) {
		t.lastAt, t.detail = at, detail
	}
	if s.due || rf.closed {
		return false
	}
	s.due = true
	wait := refusalWriteEvery - time.Since(s.lastWrite)
	if wait <= 0 {
		return true
	}
	s.timer = time.AfterFunc(wait, func() { r.writeRefusalsLater(service) })
	return false
}

// writeRefusalsLater is a scheduled write.
func (r *Receiver) writeRefusalsLater(service string) {
	ctx, cancel := context.WithTimeout(context.Background(), refusalWriteTimeout)
	defer cancel()
	r.writeRefusals(ctx, service)
}

// writeRefusals writes service's count, then schedules the next write if
// refusals came meanwhile (or the write failed and its counts wait again).
func (r *Receiver) writeRefusals(ctx context.Context, service string) {
	rf := &r.refused
	rf.write.Lock()
	wrote, err := r.writePending(ctx, service)
	rf.write.Unlock()
	if err != nil {
		r.log.Warn("count refused webhooks", "service", service, "err", err)
	}
	rf.mu.Lock()
	defer rf.mu.Unlock()
	s := rf.by[service]
	s.timer = nil
	if wrote || err != nil {
		s.lastWrite = time.Now() // a write that found nothing (Flush took it) keeps the pace free
	}
	if len(s.pending) == 0 || rf.closed {
		s.due = false
		return
	}
	s.timer = time.AfterFunc(refusalWriteEvery, func() { r.writeRefusalsLater(service) })
}

// writePending takes service's count and adds it to the table, in one
// transaction, and reports whether there was any; on failure the count
// goes back, to be written next time. The caller holds rf.write.
func (r *Receiver) writePending(ctx context.Context, service string) (bool, error) {
	rf := &r.refused
	rf.mu.Lock()
	s := rf.by[service]
	if s == nil || len(s.pending) == 0 {
		rf.mu.Unlock()
		return false, nil
	}
	taken := s.pending
	s.pending = map[refusalKey]*refusalTally{}
	rf.mu.Unlock()

	err := r.transaction(ctx, func(tx *gorm.DB) error {
		for k, t := range taken {
			if err := models.RecordRefusals(tx, service, k.reason, t.n, t.lastAt, t.detail); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		rf.mu.Lock()
		for k, t := range taken {
			if p := s.pending[k]; p != nil {
				t.n += p.n
				if !p.lastAt.Before(t.lastAt) {
					t.lastAt, t.detail = p.lastAt, p.detail
				}
			}
			s.pending[k] = t
		}
		rf.mu.Unlock()
	}
	return true, err
}

// Flush writes every refusal and re-send counted so far, whatever the
// pace; when it returns, the writes under way when it was called have
// landed too.
func (r *Receiver) Flush(ctx context.Context) error {
	return errors.Join(r.flushRefusals(ctx), r.writeDuplicates(ctx))
}

// flushRefusals writes every refusal counted so far.
func (r *Receiver) flushRefusals(ctx context.Context) error {
	rf := &r.refused
	rf.write.Lock()
	defer rf.write.Unlock()
	rf.mu.Lock()
	services := make([]string, 0, len(rf.by))
	for name := range rf.by {
		services = append(services, name)
	}
	rf.mu.Unlock()
	var errs []error
	for _, name := range services {
		_, err := r.writePending(ctx, name)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Close stops the scheduled writes and flushes: call it once the server
// takes no more deliveries (a refusal or a re-send after it is counted but
// not written) and before the database closes.
func (r *Receiver) Close(ctx context.Context) error {
	r.stopDuplicates()
	rf := &r.refused
	rf.mu.Lock()
	rf.closed = true
	for _, s := range rf.by {
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
	}
	rf.mu.Unlock()
	return r.Flush(ctx)
}
