package tracing

import (
	"context"
	"regexp"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/syncdesk/syncdesk/sync/redact"
)

// scrubbing is the exporter in front of the real one: no span leaves the
// process with a secret in it. Instrumentation writes what it sees — the
// full URL of a call (a provider's API key may ride in its query), a
// transport error quoting that URL, a status saying why — and none of it
// passes through the log's redactor on its own. So every string of a span
// does here, at the one place all spans pass: its name, attributes, events'
// attributes and status. A URL loses its query whole: its parameters' names
// say nothing of whether their values are secret.
type scrubbing struct {
	next sdktrace.SpanExporter
	r    *redact.Redactor
}

func (s scrubbing) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, sp := range spans {
		out[i] = s.scrub(sp)
	}
	return s.next.ExportSpans(ctx, out)
}

func (s scrubbing) Shutdown(ctx context.Context) error { return s.next.Shutdown(ctx) }

// scrubbed is a span as exported: the rest of it as it was.
type scrubbed struct {
	sdktrace.ReadOnlySpan
	name   string
	attrs  []attribute.KeyValue
	events []sdktrace.Event
	status sdktrace.Status
}

func (s scrubbed) Name() string                     { return s.name }
func (s scrubbed) Attributes() []attribute.KeyValue { return s.attrs }
func (s scrubbed) Events() []sdktrace.Event         { return s.events }
func (s scrubbed) Status() sdktrace.Status          { return s.status }

func (s scrubbing) scrub(sp sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	out := scrubbed{ReadOnlySpan: sp, name: s.text(sp.Name()), attrs: s.attrs(sp.Attributes()), status: sp.Status()}
	out.status.Description = s.text(out.status.Description)
	for _, ev := range sp.Events() {
		ev.Name, ev.Attributes = s.text(ev.Name), s.attrs(ev.Attributes)
		out.events = append(out.events, ev)
	}
	return out
}

func (s scrubbing) attrs(in []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(in))
	for _, kv := range in {
		switch {
		case kv.Key == "url.query":
			continue // the query alone: nothing of it is safe to say
		case kv.Value.Type() == attribute.STRING:
			kv.Value = attribute.StringValue(s.text(kv.Value.AsString()))
		case kv.Value.Type() == attribute.STRINGSLICE:
			vs := kv.Value.AsStringSlice()
			for i := range vs {
				vs[i] = s.text(vs[i])
			}
			kv.Value = attribute.StringSliceValue(vs)
		}
		out = append(out, kv)
	}
	return out
}

// urlQuery is a URL's query (and fragment), up to where the URL ends in
// running text.
var urlQuery = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>?#]*)[?#][^\s"'<>]*`)

// text is s without URLs' queries, then redacted as a log line is.
func (s scrubbing) text(v string) string {
	return s.r.Text(urlQuery.ReplaceAllString(v, "$1"))
}
