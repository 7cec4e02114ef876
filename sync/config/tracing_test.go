package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTracingValuesNameTheSetting(t *testing.T) {
	t.Setenv("TEST_TRACING_KEY", "collector-key-123")
	for _, tc := range []struct{ yaml, want string }{
		{`tracing: {otlp_endpoint: "collector"}`, `setting tracing.otlp_endpoint: "collector" is neither an http(s) URL nor host:port`},
		{`tracing: {otlp_endpoint: "ftp://collector:21"}`, `setting tracing.otlp_endpoint: "ftp://collector:21" is neither`},
		{`tracing: {otlp_endpoint: "127.0.0.1:4318", protocol: grpc}`, `setting tracing.protocol: "grpc" is not supported: use http`},
		{`tracing: {otlp_endpoint: "127.0.0.1:4318", service_name: " "}`, `setting tracing.service_name: must name this program`},
		{`tracing: {otlp_endpoint: "127.0.0.1:4318", sample_ratio: 1.5}`, `setting tracing.sample_ratio: must be between 0 and 1 (1 keeps every trace), got 1.5`},
		{`tracing: {otlp_endpoint: "127.0.0.1:4318", sample_ratio: -1}`, `setting tracing.sample_ratio: must be between 0 and 1`},
		{`tracing: {otlp_endpoint: "127.0.0.1:4318", headers: {"X-Key": "${TEST_TRACING_UNSET}"}}`,
			`setting tracing.headers.X-Key: environment variable TEST_TRACING_UNSET is not set`},
		{`tracing: {otlp_endpoint: "127.0.0.1:4318", headers: {"bad header": "x"}}`, `setting tracing.headers.bad header: "bad header" is not an HTTP header name`},
		{`tracing: {headers: {"X-Key": "${TEST_TRACING_KEY}"}}`, `setting tracing.headers: are sent to the collector; give tracing.otlp_endpoint too`},
		{`tracing: {otlp_endpint: "127.0.0.1:4318"}`, ".otlp_endpint: there is no such setting"},
	} {
		_, err := Load(writeFile(t, svc("")+tc.yaml+"\n"), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}

// Off unless an endpoint is given; a bare host:port is plain HTTP only to
// this machine, and the export's header secret reaches the redactor.
func TestTracingIsOffByDefaultAndItsHeadersAreSecrets(t *testing.T) {
	cfg, err := Load(writeFile(t, svc("")), Overrides{})
	require.NoError(t, err)
	require.False(t, cfg.Tracing.On())
	require.Equal(t, DefaultTracing(), cfg.Tracing)

	t.Setenv("TEST_TRACING_KEY", "collector-key-123")
	cfg, err = Load(writeFile(t, svc("")+"tracing: {otlp_endpoint: \"127.0.0.1:4318\", headers: {Authorization: \"Bearer ${TEST_TRACING_KEY}\"}}\n"), Overrides{})
	require.NoError(t, err)
	require.True(t, cfg.Tracing.On())
	require.Equal(t, "syncdesk", cfg.Tracing.ServiceName, "unsaid settings keep their defaults")
	require.Contains(t, cfg.Secrets(), "collector-key-123")
	require.Equal(t, "Bearer collector-key-123", cfg.Tracing.ExpandedHeaders()["Authorization"])

	for endpoint, want := range map[string]string{
		"127.0.0.1:4318":                     "http://127.0.0.1:4318/v1/traces",
		"localhost:4318":                     "http://localhost:4318/v1/traces",
		"otel.example.com:4318":              "https://otel.example.com:4318/v1/traces",
		"http://otel.internal:4318":          "http://otel.internal:4318/v1/traces",
		"https://otel.example.com/otlp/v1/t": "https://otel.example.com/otlp/v1/t",
	} {
		u, err := Tracing{OTLPEndpoint: endpoint}.Endpoint()
		require.NoError(t, err, endpoint)
		require.Equal(t, want, u.String(), endpoint)
	}
}
