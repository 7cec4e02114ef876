package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traced wraps the server's handler in otelhttp: a server span per request,
// a child of an API caller's when it sends a W3C traceparent. nil tp leaves
// the handler as it is. The span holds the path, never the query or a
// header; the exporter's scrubbing is the second guard (sync/tracing).
func traced(h http.Handler, tp trace.TracerProvider) http.Handler {
	if tp == nil {
		return h
	}
	return otelhttp.NewHandler(h, "syncdesk", otelhttp.WithTracerProvider(tp), otelhttp.WithFilter(worthTracing),
		otelhttp.WithPublicEndpointFn(public), otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()))
}

// public says a request's trace context is not to be trusted: only the
// API's clients (the shop's systems) continue their traces here. A
// webhook from a provider, or any page, starts its own trace, linked to
// the caller's: an outsider's traceparent must not choose our trace ids,
// nor make us keep every trace by marking its own sampled.
func public(r *http.Request) bool { return !strings.HasPrefix(r.URL.Path, "/api/") }

// worthTracing leaves out the requests machines make every few seconds —
// probes, scrapes, stylesheets — which would bury the ones people make.
func worthTracing(r *http.Request) bool {
	p := r.URL.Path
	return p != "/healthz" && p != "/readyz" && p != "/metrics" && !strings.HasPrefix(p, "/static/")
}

// nameSpan names the request's span by its route ("POST
// /api/records/:type/:id"), not by its path: one name per route, whatever
// ids a request holds. otelhttp takes the name from the request's Pattern
// once the handler returns, so it is set on the request otelhttp handed
// over, before a middleware replaces it. A path no route matches keeps the
// method alone.
func nameSpan(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		span := trace.SpanFromContext(c.Request().Context())
		if route := c.Path(); span.IsRecording() && route != "" {
			c.Request().Pattern = c.Request().Method + " " + route
			span.SetAttributes(attribute.String("http.route", route))
		}
		return next(c)
	}
}
