package outbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// A send happens after the request that queued it has answered, on
// whichever instance claims the link, maybe after a restart: the request's
// trace context goes with the link's row (its W3C traceparent, in
// external_map.trace_parent), so that the send's spans are that request's
// children wherever and whenever they run. A handoff in memory would hold
// only while the same process sent the link before stopping.

// traceParent is ctx's span context as a W3C traceparent; "" when ctx has none.
func traceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c.Get("traceparent")
}

// queuedBy is ctx under the span of the request that queued l, if any.
func queuedBy(ctx context.Context, l models.Link) context.Context {
	if l.TraceParent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": l.TraceParent})
}

// startSpan starts the span of one call of the send: the connector's HTTP
// call is its child. What it says is the engine's own — names, ids, the
// outcome's word, never a payload, a header or an error's text, which may
// quote what the provider said about a secret.
func (s *sender) startSpan(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := s.e.tracer.Start(ctx, "send", trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() { // tracing off or not sampled: a send builds nothing for it
		l := s.j.link
		span.SetAttributes(attribute.String("syncdesk.service", s.svc.Name), attribute.Int64("syncdesk.link.id", l.ID),
			attribute.String("syncdesk.record.type", l.LocalType), attribute.Bool("syncdesk.probe", s.j.probe),
			attribute.Int("syncdesk.attempt", s.out.Attempts+1))
	}
	return ctx, span
}

// endSpan names the span by its operation and says what came of it.
func (s *sender) endSpan(span trace.Span, c connector.Call) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	outcome := outcomeOf(c)
	span.SetName("send " + c.Operation)
	span.SetAttributes(attribute.String("syncdesk.operation", c.Operation), attribute.String("syncdesk.outcome", string(outcome)))
	if c.HTTPCode > 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", c.HTTPCode))
	}
	if outcome != models.OutcomeOK {
		span.SetStatus(codes.Error, string(outcome))
	}
}
