package config

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/syncdesk/syncdesk/sync/redact"
)

// A provider that refuses a credential often quotes it back ("invalid api
// key <the key>"), alone, without the header it came in or the scheme in
// front of it. So the redactor is given every secret the configuration
// holds, and every piece of one that may be echoed alone.

// Secrets returns the secret values the configuration holds, expanded from
// the environment, for the redactor to mask verbatim (redact.AddSecrets):
// those of every service (see Service.Secrets), the metrics token, the
// alert channels' and the trace exporter's headers, and the sources' DSNs
// and their passwords.
func (c Config) Secrets() []string {
	var out []string
	for _, name := range c.ServiceNames() {
		out = append(out, c.Services[name].Secrets()...)
	}
	if c.Metrics.Access == "token" {
		out = append(out, secretPieces(c.Metrics.Token)...)
	}
	for _, name := range c.SourceNames() {
		out = append(out, c.Sources[name].Secrets()...)
	}
	out = append(out, c.Alerts.secrets()...)
	out = append(out, c.Tracing.secrets()...)
	return out
}

// Secrets returns the service's secret values, expanded: its headers'
// values, but those of the headers whose values excerpts show
// (redact.ShowsHeader: Content-Type, Accept, …), its webhook secrets and
// its auth's password, client secret and refresh token, each with its
// pieces (see secretPieces and Auth.secrets).
func (s Service) Secrets() []string {
	var out []string
	for name, v := range s.Headers {
		if !redact.ShowsHeader(name) {
			out = append(out, secretPieces(v)...)
		}
	}
	if s.Webhook != nil {
		for _, v := range s.Webhook.Secrets {
			out = append(out, secretPieces(v)...)
		}
	}
	return append(out, s.Auth.secrets()...)
}

// ExpandedHeaders returns the headers sent on every call, ${VAR} replaced
// from the environment. Keep the result in memory only.
func (s Service) ExpandedHeaders() http.Header {
	h := http.Header{}
	for k, v := range s.Headers {
		expanded, _ := ExpandEnv(v)
		h.Set(k, expanded)
	}
	return h
}

// secretPieces are a configured secret expanded, and what of it may be
// quoted alone: the value of each ${VAR} it names, the credential after an
// Authorization scheme ("Bearer ${TOKEN}" → the token), the user:password
// of a Basic credential and its password, and the key of a Standard
// Webhooks secret without its "whsec_" prefix.
func secretPieces(raw string) []string {
	expanded, _ := ExpandEnv(raw)
	out := []string{expanded}
	for _, m := range envRef.FindAllStringSubmatch(raw, -1) {
		v, _ := ExpandEnv(m[0])
		out = append(out, v)
	}
	if scheme, cred, ok := strings.Cut(strings.TrimSpace(expanded), " "); ok && !strings.Contains(strings.TrimSpace(cred), " ") {
		cred = strings.TrimSpace(cred)
		out = append(out, cred)
		if strings.EqualFold(scheme, "basic") {
			out = append(out, basicPieces(cred)...)
		}
	}
	if key, ok := strings.CutPrefix(expanded, "whsec_"); ok {
		out = append(out, key)
	}
	return out
}

// basicPieces decodes a Basic credential into user:password and password.
func basicPieces(cred string) []string {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return nil
	}
	pair := string(raw)
	_, password, ok := strings.Cut(pair, ":")
	if !ok {
		return []string{pair}
	}
	return []string{pair, password}
}
