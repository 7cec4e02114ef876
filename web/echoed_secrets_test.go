package web

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/inbox"
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// The secrets a provider echoes back in these tests: a configured API key
// and token, and a record's own password. None looks like a secret to the
// redactor's patterns; only knowing the values hides them.
const (
	pageToken    = "tok-P4g3s8Xw2Q"
	pageKey      = "ak/5e6f7a8b+9c"
	pagePassword = "pw-Quill-42"
)

// echoingProvider refuses every create with a 401 that quotes the
// credentials and the payload's password back, as JSON or as text/plain.
func echoingProvider(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Title    string
			Customer struct{ Password string }
		}
		_ = json.Unmarshal(raw, &body)
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		msg := fmt.Sprintf("invalid api key %s for account (token %s, password %s)", r.Header.Get("X-Api-Key"), token, body.Customer.Password)
		if body.Title == "json" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "echo": map[string]string{"key": r.Header.Get("X-Api-Key")}}})
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, msg)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// setupEchoing serves syncdesk wired as main wires it — one Redactor for
// the connector, the engine, the inbox and the pages, fed the
// configuration's secrets — in front of echoingProvider.
func setupEchoing(t *testing.T, db *gorm.DB) *bundle {
	t.Helper()
	t.Setenv("SYNCDESK_TEST_PAGE_TOKEN", pageToken)
	t.Setenv("SYNCDESK_TEST_PAGE_KEY", pageKey)
	cfg := config.Default()
	cfg.TrustedProxies = []string{"127.0.0.0/8"}
	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	svc := config.Service{Kind: "http", BaseURL: echoingProvider(t).URL, Timeout: 5 * time.Second,
		Headers: map[string]string{"Authorization": "Bearer ${SYNCDESK_TEST_PAGE_TOKEN}", "X-Api-Key": "${SYNCDESK_TEST_PAGE_KEY}"},
		Retry:   config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute},
		Objects: map[string]config.Object{"order": {Remote: "deal", ExternalKey: "site_order_{local_id}", KeyField: "external_key",
			IDField: "id", Create: "POST /deals", Update: "PUT /deals/{external_id}"}}}
	cfg.Services = map[string]config.Service{"crm": svc}
	r := redact.New(cfg.Redact)
	r.AddSecrets(cfg.Secrets()...)
	log := slog.New(slog.DiscardHandler)
	eng := outbox.New(db, []outbox.Service{{Name: "crm", Config: svc, Conn: connector.NewHTTP("crm", svc, r, nil)}},
		clk, log, outbox.Options{Concurrency: 4, Redactor: r})
	rc, err := inbox.New(db, cfg.Services, clk, log, r)
	require.NoError(t, err)
	s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Version: "test", Log: log, Outbox: eng, Inbox: rc, Redactor: r})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &bundle{t: t, db: db, clock: clk, srv: srv, cfg: cfg, eng: eng}
}

func TestPagesNeverShowSecretsAProviderEchoed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setupEchoing(t, db)
		for i, shape := range []string{"json", "text"} {
			payload := fmt.Sprintf(`{"title":%q,"customer":{"name":"Ana","password":%q}}`, shape, pagePassword)
			_, err := b.eng.Upsert(t.Context(), "order", fmt.Sprint(i+1), []byte(payload))
			require.NoError(t, err)
		}
		require.NoError(t, b.eng.Drain(t.Context()))
		require.NoError(t, models.RefreshStats(db, b.clock.Now())) // as the refresh-stats task would

		var links []models.Link
		require.NoError(t, db.Order("id").Find(&links).Error)
		require.Len(t, links, 2)
		c := b.signedIn("viewer@example.com", models.RoleViewer)
		pages := []string{"/", "/links", "/links?status=failed", "/failed", "/records/order/1", "/records/order/2"}
		for _, l := range links {
			require.Equal(t, models.StatusFailed, l.Status)
			pages = append(pages, fmt.Sprintf("/links/%d", l.ID), "/failed/group?g="+url.QueryEscape(l.ErrorGroup))
		}
		for _, path := range pages {
			r := c.get(path)
			require.Equal(t, http.StatusOK, r.status, path)
			for _, secret := range []string{pageToken, pageKey, pagePassword, url.QueryEscape(pageKey), strings.ReplaceAll(pageKey, "/", "&#x2F;")} {
				require.NotContains(t, r.body, secret, "%s shows a secret", path)
			}
		}
		detail := c.get(fmt.Sprintf("/links/%d", links[1].ID)).body
		require.Contains(t, detail, "invalid api key [redacted] for account (token [redacted], password [redacted])",
			"the link page shows the provider's words, without the secrets")
		require.Contains(t, c.get("/failed").body, "invalid api key [redacted]", "the failed page shows the failure")
	})
}
