package outbox

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// The credentials of the echo tests: short enough, and plain enough, that
// no pattern of the redactor takes them for secrets. Only knowing the
// values can hide them.
const (
	echoToken = "tok-Z9y8X7w6V5u4"
	echoKey   = "ak/9f8e7d6c+5b4a"
)

// credentialEcho is a provider that refuses every request and quotes the
// credentials it was sent back, in the shape the record's title asks for.
func credentialEcho(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Title string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		key := r.Header.Get("X-Api-Key")
		switch body.Title {
		case "nested":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "auth", "message": "invalid api key " + key + " for account",
				"details": []any{map[string]any{"given": map[string]string{"token": "x", "seen": token}}}}})
		case "escaped": // JSON cut short, so read as text: its escapes stay as written
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"invalid api key %s for account","auth":"%s`, strings.ReplaceAll(key, "/", `\/`), token)
		default:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "invalid api key %s for account (token %s; key, encoded: %s)", key, token, strings.ReplaceAll(key, "/", "%2F"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// requireNoSecret fails if any stored text of the link, or the process log,
// holds one of secrets, in any case.
func (e *env) requireNoSecret(l models.Link, secrets ...string) {
	e.t.Helper()
	texts := map[string]string{"links.last_error": l.LastError, "the process log": e.logBuf.String()}
	for i, a := range e.attempts(l.ID) {
		texts[fmt.Sprintf("attempt %d error", i+1)] = a.Error
		texts[fmt.Sprintf("attempt %d request", i+1)] = a.RequestExcerpt
		texts[fmt.Sprintf("attempt %d response", i+1)] = a.ResponseExcerpt
	}
	for where, text := range texts {
		for _, s := range secrets {
			require.NotContains(e.t, strings.ToLower(text), strings.ToLower(s), "%s: %s", where, text)
		}
	}
}

func TestCredentialsEchoedByTheProviderAreMasked(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		t.Setenv("SYNCDESK_TEST_ECHO_TOKEN", echoToken)
		t.Setenv("SYNCDESK_TEST_ECHO_KEY", echoKey)
		e := setup(t, db)
		cfg := crmConfig(credentialEcho(t).URL)
		cfg.Headers = map[string]string{"Authorization": "Bearer ${SYNCDESK_TEST_ECHO_TOKEN}", "X-Api-Key": "${SYNCDESK_TEST_ECHO_KEY}"}
		e.svcs = []Service{{Name: "crm", Config: cfg, Conn: connector.NewHTTP("crm", cfg, e.redactr, nil)}}
		eng := e.engine(db, Options{Concurrency: 2, Redactor: e.redactr})

		for i, shape := range []string{"nested", "escaped", "plain"} {
			_, err := eng.Upsert(t.Context(), "order", fmt.Sprint(i), []byte(`{"title":"`+shape+`"}`))
			require.NoError(t, err)
		}
		require.NoError(t, eng.Drain(t.Context()))

		for i, shape := range []string{"nested", "escaped", "plain"} {
			t.Run(shape, func(t *testing.T) {
				l := e.link("order", fmt.Sprint(i), "crm")
				require.Equal(t, models.StatusFailed, l.Status, "a 401 is permanent")
				require.Contains(t, l.LastError, "invalid api key [redacted] for account", "the provider's words stay, the key goes")
				as := e.attempts(l.ID)
				require.Len(t, as, 1)
				require.Contains(t, as[0].ResponseExcerpt, "HTTP/1.1 401", "the excerpt was stored")
				e.requireNoSecret(l, echoToken, echoKey, strings.ReplaceAll(echoKey, "/", `\/`), strings.ReplaceAll(echoKey, "/", "%2F"))
			})
		}
		require.Contains(t, e.logBuf.String(), "send failed", "the failures were logged")
	})
}

// recordEcho refuses creates with a text/plain 422 that quotes the
// password it was sent, and answers lookups with a 500 quoting it too.
func recordEcho(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Customer struct{ Password string }
		}
		_ = json.Unmarshal(raw, &body)
		w.Header().Set("Content-Type", "text/plain")
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, "search failed; stored deal has password pw-7Kq2 and cvv 417")
			return
		}
		if body.Customer.Password == "pw-7Kq2" {
			w.WriteHeader(http.StatusServiceUnavailable) // the create may have happened: look it up next
			io.WriteString(w, "try later")
			return
		}
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprintf(w, "validation failed: password %s is too weak (card cvv %s)", body.Customer.Password, "417")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRecordSecretsEchoedInPlainTextAreMasked(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		cfg := crmConfig(recordEcho(t).URL)
		cfg.Retry = configRetry(3, cfg.Retry.Base, cfg.Retry.Max)
		e.svcs = []Service{{Name: "crm", Config: cfg, Conn: connector.NewHTTP("crm", cfg, e.redactr, nil)}}
		eng := e.engine(db, Options{Concurrency: 2, Redactor: e.redactr})

		e.eng = eng
		e.upsert("order", "1", `{"title":"Order 1","customer":{"password":"hunter2 correct horse","card":{"cvv":"417"}}}`)
		e.upsert("order", "2", `{"title":"Order 2","customer":{"password":"pw-7Kq2","card":{"cvv":"417"}}}`)
		e.settle(eng)

		created := e.link("order", "1", "crm")
		require.Equal(t, models.StatusFailed, created.Status)
		require.Contains(t, created.LastError, "password [redacted] is too weak (card cvv [redacted])")
		e.requireNoSecret(created, "hunter2", "correct horse", "417")

		looked := e.link("order", "2", "crm")
		require.Equal(t, models.StatusFailed, looked.Status)
		as := e.attempts(looked.ID)
		require.Greater(t, len(as), 1)
		require.Equal(t, "deal.lookup", as[1].Operation, "the ambiguous create was looked up")
		require.Contains(t, as[1].Error, "stored deal has password [redacted] and cvv [redacted]")
		e.requireNoSecret(looked, "pw-7Kq2", "417")
	})
}
