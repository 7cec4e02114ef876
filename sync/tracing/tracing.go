// Package tracing gives the process its OpenTelemetry tracer provider from
// the configuration: a no-op one when tracing is off (nothing is sent, and
// nothing is recorded), else one that exports over OTLP/HTTP what every span
// holds after the redactor has been through it.
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Provider is the tracer provider of the process, and what ends it.
type Provider struct {
	trace.TracerProvider
	sdk *sdktrace.TracerProvider // nil when tracing is off
}

// Off is the provider when tracing is off: every span a no-op.
func Off() *Provider { return &Provider{TracerProvider: noop.NewTracerProvider()} }

// New returns the provider cfg asks for: Off when it names no endpoint,
// else one exporting to the collector over OTLP/HTTP. Nothing is sent
// before the first span ends.
func New(cfg config.Tracing, r *redact.Redactor) (*Provider, error) {
	if !cfg.On() {
		return Off(), nil
	}
	u, err := cfg.Endpoint()
	if err != nil {
		return nil, fmt.Errorf("setting tracing.otlp_endpoint: %w", err)
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(u.String()),
		otlptracehttp.WithHeaders(cfg.ExpandedHeaders()))
	if err != nil {
		return nil, fmt.Errorf("setting tracing.otlp_endpoint: %w", err)
	}
	return WithExporter(cfg, r, exp), nil
}

// WithExporter returns a provider that sends its spans, redacted by r, to
// exp in batches: the OTLP exporter, or an in-memory one in tests.
func WithExporter(cfg config.Tracing, r *redact.Redactor, exp sdktrace.SpanExporter) *Provider {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(scrubbing{next: exp, r: r}),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName))),
	)
	return &Provider{TracerProvider: tp, sdk: tp}
}

// Active is the provider when tracing is on, nil when off: the parts that
// take one then add nothing to a request or a call, not even a no-op span.
func (p *Provider) Active() trace.TracerProvider {
	if p.sdk == nil {
		return nil
	}
	return p.sdk
}

// ForceFlush exports the spans ended so far.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// Shutdown exports what is left and stops; call it once, at the stop.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}
