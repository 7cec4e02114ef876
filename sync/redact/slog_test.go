package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// logThroughHandler logs one record of every kind through NewHandler into a
// real JSON handler and returns what was written.
func logThroughHandler(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	inner := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})
	log := slog.New(NewHandler(inner, New([]string{"ssn"})))

	log = log.With("service", "crm", "api_key", "ak_9f8e7d6c5b4a39281706f5e4", "contact", "ana@example.com")
	log = log.WithGroup("req").With(slog.Group("auth", "user", "ana", "password", "pw-hunter2"))
	log.Info("sending with Bearer sk_live_4eC39HqLyjWDarjtT1zdp7dc",
		"deal_id", 42,
		"link", "123e4567-e89b-12d3-a456-426614174000",
		"err", errors.New("401 from https://crm.example.com: token=tok_QW5hU2lsdmEyMDI0IXNlY3JldA rejected"),
		"body", []byte(`{"deal":{"owner":{"phone":"+1 555 0100","name":"Ana"}},"amount":12.50}`),
		"meta", map[string]any{"client_secret": "cs_1", "region": "eu"},
		"card", slog.GroupValue(slog.String("number", "4242424242424242"), slog.String("brand", "visa")),
		"reference", 4111111111111111,
		slog.Group("customer", "ssn", "078-05-1120", "city", "Lisbon"),
	)
	log.WithGroup("secret").Info("inside a sensitive group", "value", "whole-group-hidden", "n", 7)
	log.Debug("below the level", "password", "never-even-redacted")
	return buf.String()
}

func TestHandlerHidesSecrets(t *testing.T) {
	out := logThroughHandler(t)
	for _, secret := range []string{
		"ak_9f8e7d6c5b4a39281706f5e4", "ana@example.com", "pw-hunter2", "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
		"tok_QW5hU2lsdmEyMDI0IXNlY3JldA", "555 0100", "cs_1", "4242424242424242", "4111111111111111",
		"078-05-1120", "whole-group-hidden", "never-even-redacted",
	} {
		require.NotContains(t, out, secret)
	}
	for _, kept := range []string{
		`"service":"crm"`, `"user":"ana"`, `"deal_id":42`, `"link":"123e4567-e89b-12d3-a456-426614174000"`,
		"401 from https://crm.example.com: token=[redacted] rejected", `"name":"Ana"`, `"amount":12.50`,
		`"region":"eu"`, `"city":"Lisbon"`, "sending with Bearer [redacted]", `"n":"[redacted]"`,
	} {
		require.Contains(t, out, kept)
	}
}

func TestHandlerOutputShape(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(logThroughHandler(t)), "\n")
	require.Len(t, lines, 2, "the debug record is filtered by Enabled")

	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	require.Equal(t, "[redacted]", rec["api_key"], "WithAttrs attrs are redacted")
	req, ok := rec["req"].(map[string]any)
	require.True(t, ok, "attrs after WithGroup sit in the group: %v", rec)
	require.Equal(t, "[redacted]", req["auth"].(map[string]any)["password"])
	require.Equal(t, "[redacted]", req["card"], "a group under a sensitive key goes whole")
	require.Equal(t, "[card]", req["reference"], "a card number logged as an int")
	require.Equal(t, "[redacted]", req["body"].(map[string]any)["deal"].(map[string]any)["owner"].(map[string]any)["phone"],
		"[]byte is redacted as JSON and nested as JSON")
	require.Equal(t, "[redacted]", req["customer"].(map[string]any)["ssn"], "configured field inside slog.Group")
}

func TestHandlerWithTextHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, nil), nil))
	log.Info("hi", "token", "abc", "body", []byte(`{"password":"p","ok":true}`), "err", errors.New("password=p"))
	require.Contains(t, buf.String(), `token=[redacted]`)
	require.Contains(t, buf.String(), `body="{\"password\":\"[redacted]\",\"ok\":true}"`)
	require.Contains(t, buf.String(), `err="password=[redacted]"`)
}

func TestHandlerEnabledAndEmptyGroup(t *testing.T) {
	inner := slog.NewJSONHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn})
	h := NewHandler(inner, nil)
	require.False(t, h.Enabled(context.Background(), slog.LevelInfo))
	require.True(t, h.Enabled(context.Background(), slog.LevelError))
	require.Same(t, h, h.WithGroup(""), "slog: WithGroup(\"\") returns the receiver")
}
