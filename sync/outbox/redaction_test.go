package outbox

import (
	"encoding/json"
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

// A provider that echoes every secret it receives, in its headers and its
// body, and refuses the request so that the echo lands in the error too.
func echoProvider(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo-Authorization", r.Header.Get("Authorization"))
		w.Header().Set("Set-Cookie", "sid="+r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		json.NewEncoder(w).Encode(map[string]any{"error": "rejected: " + string(body), "echo": json.RawMessage(body),
			"auth": r.Header.Get("Authorization")})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSecretsNeverReachTheAttemptLogOrTheProcessLog(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		const apiToken = "crm-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
		t.Setenv("SYNCDESK_TEST_CRM_TOKEN", apiToken)
		e := setup(t, db)
		cfg := crmConfig(echoProvider(t).URL)
		cfg.Headers = map[string]string{"Authorization": "Bearer ${SYNCDESK_TEST_CRM_TOKEN}"}
		e.svcs = []Service{{Name: "crm", Config: cfg, Conn: connector.NewHTTP("crm", cfg, e.redactr, nil)}}
		eng := e.engine(db, Options{Concurrency: 2})

		secrets := []string{apiToken, "hunter2-correct-horse", "tok_5f4dcc3b5aa765d61d8327deb882cf99", "4242424242424242",
			"4242 4242 4242 4242", "ana.customer@example.com"}
		payload := `{"title":"Order 1","customer":{"password":"hunter2-correct-horse","api":{"token":"tok_5f4dcc3b5aa765d61d8327deb882cf99"},
			"email":"ana.customer@example.com"},"payment":{"card_number":"4242424242424242"},"note":"card 4242 4242 4242 4242 on file"}`
		_, err := eng.Upsert(t.Context(), "order", "1", []byte(payload))
		require.NoError(t, err)
		require.NoError(t, eng.Drain(t.Context()))

		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusFailed, l.Status)
		as := e.attempts(l.ID)
		require.Len(t, as, 1)
		require.Contains(t, as[0].ResponseExcerpt, "[redacted]", "the excerpt is there, redacted")
		require.Contains(t, as[0].RequestExcerpt, "Order 1", "what is not secret stays readable")

		logged := e.logBuf.String()
		require.Contains(t, logged, "send failed", "the failure was logged")
		for _, secret := range secrets {
			for _, a := range as {
				for col, v := range map[string]string{"request": a.RequestExcerpt, "response": a.ResponseExcerpt, "error": a.Error} {
					require.NotContains(t, v, secret, "attempt %s", col)
				}
			}
			require.NotContains(t, l.LastError, secret)
			require.NotContains(t, logged, secret, "process log")
		}
		require.False(t, strings.Contains(logged, "Bearer crm-live"), "no bearer credential in the log")
	})
}
