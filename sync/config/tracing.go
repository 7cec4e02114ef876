package config

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
)

// Tracing sends OpenTelemetry traces to an OTLP collector. Off unless an
// endpoint is given: nothing talks to the network unless configured.
type Tracing struct {
	// OTLPEndpoint is the collector: a URL (http:// or https://, path
	// default /v1/traces), or host:port, which is plain HTTP to a loopback
	// address and HTTPS to any other.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// Protocol is how spans are sent; http (OTLP over HTTP, protobuf) only.
	Protocol string `yaml:"protocol"`
	// ServiceName names this program in the traces (service.name).
	ServiceName string `yaml:"service_name"`
	// SampleRatio is the share of traces started here that are kept, 0 to 1;
	// a trace begun upstream keeps its caller's choice.
	SampleRatio float64 `yaml:"sample_ratio"`
	// Headers go with every export (a collector's API key); ${VAR} is read
	// from the environment.
	Headers map[string]string `yaml:"headers"`
}

// DefaultTracing is tracing off, with the settings an endpoint would use.
func DefaultTracing() Tracing {
	return Tracing{Protocol: "http", ServiceName: "syncdesk", SampleRatio: 1}
}

// On reports whether traces are sent.
func (t Tracing) On() bool { return t.OTLPEndpoint != "" }

// Endpoint returns the collector's URL, the scheme filled in for a bare
// host:port. Validate has refused an endpoint it cannot read.
func (t Tracing) Endpoint() (*url.URL, error) {
	raw := t.OTLPEndpoint
	if !strings.Contains(raw, "://") {
		host, port, err := net.SplitHostPort(raw)
		if err != nil || port == "" {
			return nil, fmt.Errorf("%q is neither an http(s) URL nor host:port (e.g. 127.0.0.1:4318)", raw)
		}
		scheme := "https"
		if host == "localhost" || net.ParseIP(host).IsLoopback() {
			scheme = "http" // a collector on the same machine rarely has a certificate
		}
		raw = scheme + "://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("%q is neither an http(s) URL nor host:port (e.g. 127.0.0.1:4318)", t.OTLPEndpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u, nil
}

// ExpandedHeaders returns the export's headers, ${VAR} replaced from the
// environment. Keep the result in memory only.
func (t Tracing) ExpandedHeaders() map[string]string {
	out := make(map[string]string, len(t.Headers))
	for k, v := range t.Headers {
		out[k], _ = ExpandEnv(v)
	}
	return out
}

func (t Tracing) validate() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting tracing.%s: %s", key, fmt.Sprintf(format, a...)))
	}
	if t.On() {
		if _, err := t.Endpoint(); err != nil {
			bad("otlp_endpoint", "%v", err)
		}
	}
	switch t.Protocol {
	case "http", "http/protobuf":
	default:
		bad("protocol", "%q is not supported: use http (OTLP over HTTP, usually port 4318)", t.Protocol)
	}
	if strings.TrimSpace(t.ServiceName) == "" {
		bad("service_name", "must name this program in the traces, e.g. syncdesk")
	}
	if !(t.SampleRatio >= 0 && t.SampleRatio <= 1) {
		bad("sample_ratio", "must be between 0 and 1 (1 keeps every trace), got %v", t.SampleRatio)
	}
	checkHeaders(bad, t.Headers)
	if len(t.Headers) > 0 && !t.On() {
		bad("headers", "are sent to the collector; give tracing.otlp_endpoint too")
	}
	return errs
}

func (t Tracing) headerNames() []string {
	names := make([]string, 0, len(t.Headers))
	for name := range t.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// secrets returns the export headers' values, expanded, with their pieces:
// a collector's API key must never reach a log line or a span.
func (t Tracing) secrets() []string {
	var out []string
	for _, name := range t.headerNames() {
		out = append(out, secretPieces(t.Headers[name])...)
	}
	return out
}
