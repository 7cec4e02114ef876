package web

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
	"github.com/syncdesk/syncdesk/sync/outbox"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// oauthToken is the access token the provider hands out, then quotes back.
const oauthToken = "00Dxx0000001gPL!AQ4AQFq3rT8vW2yZ"

// An OAuth 2.0 provider that quotes its own access token back in a refusal:
// the token, fetched at run time and never configured, is on no page.
func TestPagesNeverShowAnOAuthTokenTheProviderEchoed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/services/oauth2/token" {
				fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","instance_url":"http://%s"}`, oauthToken, r.Host)
				return
			}
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `[{"message":"session %s may not write Name","errorCode":"INSUFFICIENT_ACCESS"}]`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		}))
		t.Cleanup(srv.Close)
		cfg := config.Default()
		svc := config.Service{Kind: "http", BaseURL: srv.URL, Timeout: 5 * time.Second,
			Auth:  config.Auth{Type: config.AuthOAuth2, TokenURL: "/services/oauth2/token", ClientID: "app", ClientSecret: "app-secret-9Qx"},
			Retry: config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute},
			Objects: map[string]config.Object{"account": {Remote: "Account", ExternalKey: "account_{local_id}", KeyField: "Key__c",
				IDField: "Id|id", Upsert: "PATCH /services/data/v60.0/sobjects/Account/Key__c/{external_key}", Body: config.Body{Expr: "."}}}}
		cfg.Services = map[string]config.Service{"salesforce": svc}
		r := redact.New(cfg.Redact)
		r.AddSecrets(cfg.Secrets()...)
		clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
		log := slog.New(slog.DiscardHandler)
		eng := outbox.New(db, []outbox.Service{{Name: "salesforce", Config: svc, Conn: connector.NewHTTP("salesforce", svc, r, nil)}},
			clk, log, outbox.Options{Concurrency: 2, Redactor: r})
		s, err := New(Deps{DB: db, Config: cfg, Clock: clk, Version: "test", Log: log, Outbox: eng, Redactor: r})
		require.NoError(t, err)
		b := &bundle{t: t, db: db, clock: clk, srv: httptest.NewServer(s.Handler()), cfg: cfg, eng: eng}
		t.Cleanup(b.srv.Close)

		_, err = eng.Upsert(t.Context(), "account", "1", []byte(`{"Name":"Acme"}`))
		require.NoError(t, err)
		require.NoError(t, eng.Drain(t.Context()))
		require.NoError(t, models.RefreshStats(db, clk.Now()))
		var l models.Link
		require.NoError(t, db.Take(&l).Error)
		require.Equal(t, models.StatusFailed, l.Status)

		c := b.signedIn("viewer@example.com", models.RoleViewer)
		for _, path := range []string{"/", "/links", "/failed", "/records/account/1", fmt.Sprintf("/links/%d", l.ID)} {
			page := c.get(path)
			require.Equal(t, http.StatusOK, page.status, path)
			require.NotContains(t, page.body, oauthToken[:16], "%s shows the token", path)
			require.NotContains(t, page.body, "app-secret-9Qx", path)
		}
		require.Contains(t, c.get(fmt.Sprintf("/links/%d", l.ID)).body, "session [redacted] may not write Name")
	})
}
