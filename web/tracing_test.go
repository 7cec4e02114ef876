package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
	"github.com/syncdesk/syncdesk/sync/sandbox"
	"github.com/syncdesk/syncdesk/sync/tracing"
)

// tracedBundle is a server, a sandbox CRM and two engines (two instances
// on one database), all tracing into one in-memory exporter.
type tracedBundle struct {
	*bundle
	spans  *tracetest.InMemoryExporter
	tp     *tracing.Provider
	sender *outbox.Engine // the other instance, which sends what the server's queued
}

const (
	traceHeaderSecret = "crm-key-never-in-a-span-1234"
	traceQueryToken   = "query-token-never-in-a-span-5678"
	tracePayloadWord  = "payload-password-never-in-a-span"
)

func setupTraced(t *testing.T, db *gorm.DB) *tracedBundle {
	crm := sandbox.NewCRM(sandbox.Options{})
	crmSrv := httptest.NewServer(crm)
	t.Cleanup(crmSrv.Close)
	svc := config.Service{Kind: "http", BaseURL: crmSrv.URL, Timeout: 5 * time.Second,
		Headers: map[string]string{"X-Api-Key": traceHeaderSecret},
		Retry:   config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute},
		Objects: map[string]config.Object{"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key",
			IDField: "id", Create: "POST /deals?access_token=" + traceQueryToken, Update: "PUT /deals/{external_id}",
			Lookup: "GET /deals?external_key={external_key}"}}}
	cfg := config.Default()
	cfg.Services = map[string]config.Service{"crm": svc}
	r := redact.New(nil)
	r.AddSecrets(cfg.Secrets()...)
	mem := tracetest.NewInMemoryExporter()
	tp := tracing.WithExporter(cfg.Tracing, r, mem)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	engine := func() *outbox.Engine {
		conn := connector.NewHTTP("crm", svc, r, nil).WithTracer(tp)
		return outbox.New(db, []outbox.Service{{Name: "crm", Config: svc, Conn: conn}}, clk, log,
			outbox.Options{Concurrency: 2, Redactor: r, Tracer: tp})
	}
	eng := engine()
	s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Version: "test", Log: log, Outbox: eng, Redactor: r, Tracer: tp})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	b := &bundle{t: t, db: db, clock: clk, srv: srv, cfg: cfg, eng: eng, crm: crm, web: s}
	return &tracedBundle{bundle: b, spans: mem, tp: tp, sender: engine()}
}

// ended returns the spans ended so far, exported.
func (b *tracedBundle) ended() tracetest.SpanStubs {
	b.t.Helper()
	require.NoError(b.t, b.tp.ForceFlush(context.Background()))
	return b.spans.GetSpans()
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value
	}
	return out
}

func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var names []string
	for _, s := range spans {
		if s.Name == name {
			return s
		}
		names = append(names, s.Name)
	}
	t.Fatalf("no span named %q among %q", name, names)
	return tracetest.SpanStub{}
}

// requireNoSecretIn fails when any string a span holds — name, status,
// attributes, events — quotes one of secrets.
func requireNoSecretIn(t *testing.T, spans tracetest.SpanStubs, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		all := []string{s.Name, s.Status.Description}
		for _, kv := range s.Attributes {
			all = append(all, string(kv.Key)+"="+kv.Value.String())
		}
		for _, ev := range s.Events {
			for _, kv := range ev.Attributes {
				all = append(all, kv.Value.String())
			}
		}
		text := strings.Join(all, " ")
		for _, secret := range secrets {
			require.NotContains(t, text, secret, "span %q", s.Name)
		}
	}
}

// One record upserted through the API and sent by another instance is one
// trace: the server's span, the engine's send under it, the connector's
// call under that — and no secret in any of them: not the service's header,
// not a token in the call's query, not the API token, not the payload.
func TestOneSendIsOneTraceFromRequestToProvider(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupTraced(t, db)
		a := b.api()
		code, out := a.do("PUT", "/api/v1/records/order/7", `{"title":"Order 7","password":"`+tracePayloadWord+`"}`)
		require.Equal(t, http.StatusOK, code, out)
		linkID := int64(out["links"].([]any)[0].(map[string]any)["id"].(float64))
		require.NoError(t, b.sender.Drain(context.Background()))
		require.Equal(t, 1, b.crm.CountByKey("site_order_7"))

		spans := b.ended()
		server := spanNamed(t, spans, "PUT /api/v1/records/:type/:id")
		send := spanNamed(t, spans, "send deal.create")
		var call tracetest.SpanStub
		for _, s := range spans {
			if s.SpanKind == trace.SpanKindClient && s.Parent.SpanID() == send.SpanContext.SpanID() {
				call = s
			}
		}
		require.True(t, call.SpanContext.IsValid(), "the connector's HTTP call is a child of the send")

		require.Equal(t, trace.SpanKindServer, server.SpanKind)
		require.Equal(t, "/api/v1/records/:type/:id", attrs(server)["http.route"].AsString())
		require.Equal(t, server.SpanContext.TraceID(), send.SpanContext.TraceID(), "the send joins the request's trace")
		require.Equal(t, server.SpanContext.SpanID(), send.Parent.SpanID(), "the send is the request's child")
		require.Equal(t, send.SpanContext.TraceID(), call.SpanContext.TraceID())

		got := attrs(send)
		require.Equal(t, "crm", got["syncdesk.service"].AsString())
		require.Equal(t, "deal.create", got["syncdesk.operation"].AsString())
		require.Equal(t, string(models.OutcomeOK), got["syncdesk.outcome"].AsString())
		require.Equal(t, int64(1), got["syncdesk.attempt"].AsInt64())
		require.Equal(t, linkID, got["syncdesk.link.id"].AsInt64())
		require.Equal(t, int64(http.StatusCreated), attrs(call)["http.response.status_code"].AsInt64(),
			"the call's span says what the provider answered")
		require.Contains(t, attrs(call)["url.full"].AsString(), "/deals", "the call's URL keeps its path")

		token := strings.TrimPrefix(a.auth.Get("Authorization"), "Bearer ")
		requireNoSecretIn(t, spans, traceHeaderSecret, traceQueryToken, tracePayloadWord, token)
	})
}

// A retry is the same trace: the link's row keeps the request's context,
// and each attempt is a span with its number, operation and outcome.
func TestARetryJoinsTheTraceWithItsAttemptNumber(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupTraced(t, db)
		b.crm.Script(sandbox.Error5xx(503))
		code, out := b.api().do("PUT", "/api/v1/records/order/8", `{"title":"Order 8"}`)
		require.Equal(t, http.StatusOK, code, out)
		require.NoError(t, b.sender.Drain(context.Background()))
		b.clock.Advance(time.Minute)
		require.NoError(t, b.sender.Drain(context.Background()))
		require.Equal(t, 1, b.crm.CountByKey("site_order_8"))

		spans := b.ended()
		server := spanNamed(t, spans, "PUT /api/v1/records/:type/:id")
		var outcomes []string
		for _, s := range spans {
			if s.Parent.SpanID() == server.SpanContext.SpanID() && strings.HasPrefix(s.Name, "send ") {
				a := attrs(s)
				outcomes = append(outcomes, fmt.Sprintf("%d %s %s", a["syncdesk.attempt"].AsInt64(), a["syncdesk.operation"].AsString(), a["syncdesk.outcome"].AsString()))
			}
		}
		// A 503 to a create without an idempotency key may have created
		// the deal: the next send looks it up first, then creates.
		require.ElementsMatch(t, []string{"1 deal.create ambiguous", "2 deal.lookup ok", "3 deal.create ok"}, outcomes,
			"every attempt under the request that queued them")
	})
}

// Probes are not traced (they would bury what people do), and a span is
// named by its route, never by a path's ids: one name per route.
func TestSpansAreNamedByRouteAndProbesAreLeftOut(t *testing.T) {
	t.Parallel()
	b := setupTraced(t, dbtest.SQLite(t))
	c := b.client()
	require.Equal(t, http.StatusOK, c.get("/healthz").status)
	a := b.api()
	for _, id := range []string{"41", "42"} {
		code, _ := a.do("GET", "/api/v1/records/order/"+id, "")
		require.Equal(t, http.StatusNotFound, code)
	}
	c.get("/no-such-page/12345")

	var names []string
	for _, s := range b.ended() {
		names = append(names, s.Name)
		require.NotContains(t, attrs(s)["url.path"].AsString(), "/healthz")
	}
	require.Equal(t, []string{"GET /api/v1/records/:type/:id", "GET /api/v1/records/:type/:id"}, names[:2])
	for _, n := range names {
		require.NotContains(t, n, "12345", "an unmatched path is not a span name")
	}
}

// "Sync now" is its own trace: the send it asks for is the click's child,
// not the child of the upsert that first queued the link.
func TestSyncNowStartsTheTraceOfItsSend(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupTraced(t, db)
		a := b.api()
		code, out := a.do("PUT", "/api/v1/records/order/9", `{"title":"Order 9"}`)
		require.Equal(t, http.StatusOK, code, out)
		linkID := int64(out["links"].([]any)[0].(map[string]any)["id"].(float64))
		require.NoError(t, b.sender.Drain(context.Background()))

		code, out = a.do("POST", fmt.Sprintf("/api/v1/links/%d/sync", linkID), "")
		require.Equal(t, http.StatusAccepted, code, out)
		require.NoError(t, b.sender.Drain(context.Background()))

		spans := b.ended()
		click := spanNamed(t, spans, "POST /api/v1/links/:id/sync")
		var sends []string
		for _, s := range spans {
			if s.Parent.SpanID() == click.SpanContext.SpanID() {
				sends = append(sends, s.Name)
			}
		}
		require.Equal(t, []string{"send deal.update"}, sends, "the update Sync now asked for is the click's child")
	})
}

// Tracing off (the default), a request leaves no trace context on the
// links it queues, even from a traced caller, and the server's handler is
// Echo's own.
func TestTracingOffLeavesNoTraceOnTheLinks(t *testing.T) {
	t.Parallel()
	b := setupSQLite(t)
	a := b.api()
	a.auth.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01") // a traced caller's
	code, out := a.do("PUT", "/api/v1/records/order/5", `{"title":"Order 5"}`)
	require.Equal(t, http.StatusOK, code, out)
	var l models.Link
	require.NoError(t, b.db.Where("local_id = ?", "5").Take(&l).Error)
	require.Empty(t, l.TraceParent)
	require.Same(t, b.web.echo, b.web.Handler(), "no tracing middleware around the server")
}

// An API client's trace continues here; a webhook's caller (anyone on the
// internet) gets a trace of our own, linked to theirs, whatever it sends.
func TestOnlyAPICallersContinueTheirTraces(t *testing.T) {
	t.Parallel()
	b := setupTraced(t, dbtest.SQLite(t))
	const callerTrace = "0af7651916cd43dd8448eb211c80319c"
	traceparent := "00-" + callerTrace + "-b7ad6b7169203331-01"
	a := b.api()
	a.auth.Set("Traceparent", traceparent)
	code, out := a.do("PUT", "/api/v1/records/order/3", `{"title":"Order 3"}`)
	require.Equal(t, http.StatusOK, code, out)
	b.client().do(http.MethodPost, "/hooks/crm", nil, http.Header{"Traceparent": {traceparent}})

	spans := b.ended()
	api := spanNamed(t, spans, "PUT /api/v1/records/:type/:id")
	require.Equal(t, callerTrace, api.SpanContext.TraceID().String(), "the API client's trace continues")
	hook := spanNamed(t, spans, "POST /hooks/:service")
	require.NotEqual(t, callerTrace, hook.SpanContext.TraceID().String(), "a webhook's caller does not choose our trace")
	require.Len(t, hook.Links, 1)
	require.Equal(t, callerTrace, hook.Links[0].SpanContext.TraceID().String(), "but it is linked")
}
