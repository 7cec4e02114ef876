package tracing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

const secret = "sk_live_tracing_secret_42"

// A call's URL may carry an API key in its query, and a transport error
// quotes that URL: neither reaches the exporter, whatever attribute, event
// or status holds it.
func TestNoSecretLeavesInASpan(t *testing.T) {
	r := redact.New(nil)
	r.AddSecrets(secret)
	mem := tracetest.NewInMemoryExporter()
	p := WithExporter(config.DefaultTracing(), r, mem)
	_, span := p.Tracer("test").Start(context.Background(), "HTTP POST",
		trace.WithAttributes(attribute.String("url.full", "https://crm.example.com/deals?api_key=unknown-to-the-redactor"),
			attribute.String("url.query", "api_key=unknown-to-the-redactor"),
			attribute.StringSlice("peer.names", []string{"a", secret}),
			attribute.Int("attempt", 3)))
	err := errors.New(`Post "https://crm.example.com/deals?api_key=unknown-to-the-redactor": dial tcp: refused, token ` + secret)
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.End()
	require.NoError(t, p.ForceFlush(context.Background()))

	spans := mem.GetSpans()
	require.Len(t, spans, 1)
	got := spans[0]
	all := got.Name + " " + got.Status.Description
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range got.Attributes {
		attrs[kv.Key] = kv.Value
		all += " " + kv.Value.String()
	}
	for _, ev := range got.Events {
		for _, kv := range ev.Attributes {
			all += " " + kv.Value.String()
		}
	}
	require.NotContains(t, all, "unknown-to-the-redactor")
	require.NotContains(t, all, secret)
	require.Equal(t, "https://crm.example.com/deals", attrs["url.full"].AsString(), "the URL keeps its path")
	require.NotContains(t, attrs, attribute.Key("url.query"))
	require.Equal(t, int64(3), attrs["attempt"].AsInt64(), "what is not text is kept")
	require.Contains(t, got.Status.Description, "dial tcp: refused", "the reason stays readable")
	require.Equal(t, "syncdesk", resourceName(got))
}

func resourceName(s tracetest.SpanStub) string {
	v, _ := s.Resource.Set().Value("service.name")
	return v.AsString()
}

// Off, spans are no-ops: nothing is recorded, nothing sent.
func TestOffRecordsNothing(t *testing.T) {
	p, err := New(config.DefaultTracing(), redact.New(nil))
	require.NoError(t, err)
	_, span := p.Tracer("test").Start(context.Background(), "x")
	require.False(t, span.IsRecording())
	require.False(t, span.SpanContext().IsValid())
	require.NoError(t, p.Shutdown(context.Background()))
}

// Configured, spans go to the collector over OTLP/HTTP with its headers;
// a plain host:port on loopback is plain HTTP.
func TestExportsToTheConfiguredCollector(t *testing.T) {
	var mu sync.Mutex
	var auth, path string
	var body []byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		auth, path, body = r.Header.Get("Authorization"), r.URL.Path, b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("TEST_COLLECTOR_KEY", secret)
	cfg := config.DefaultTracing()
	cfg.OTLPEndpoint = strings.TrimPrefix(collector.URL, "http://")
	cfg.Headers = map[string]string{"Authorization": "Bearer ${TEST_COLLECTOR_KEY}"}
	r := redact.New(nil)
	r.AddSecrets(secret)
	p, err := New(cfg, r)
	require.NoError(t, err)
	_, span := p.Tracer("test").Start(context.Background(), "send order.create")
	span.End()
	require.NoError(t, p.Shutdown(context.Background()))

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "/v1/traces", path)
	require.Equal(t, "Bearer "+secret, auth, "the collector's key goes in its header")
	require.Contains(t, string(body), "send order.create")
	require.NotContains(t, string(body), secret, "and nowhere else")
}
