package connector

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/redact"
)

// answering is a provider that gives every request the same answer.
func answering(t *testing.T, status int, body string) *HTTP {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return NewHTTP("crm", service(srv.URL), redact.New(nil), nil)
}

// A create the provider answered with a 2xx may have made the object even
// when the answer holds no id we can read. Calling that permanent failed the
// link without a lookup, and an operator's Retry then created a second one.
func TestCreateAnsweredWithoutAnIDMayHaveCreatedTheObject(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"202 accepted, no body", http.StatusAccepted, ""},
		{"204 no content", http.StatusNoContent, ""},
		{"201 with the id under another field", http.StatusCreated, `{"deal":{"id":"d1"}}`},
		{"200 with a body that is not JSON", http.StatusOK, "created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := answering(t, tc.status, tc.body).Create(context.Background(), "order", []byte(`{"title":"a"}`), "order-1-create")
			require.Equal(t, Temporary, call.Class, "a 2xx without an id is retried, not given up on")
			require.True(t, call.Ambiguous, "the object may exist: the next attempt must look it up first")
			require.Empty(t, call.ExternalID)
			require.Equal(t, tc.status, call.HTTPCode)
			require.Contains(t, call.Error, "without the new object's id")
			require.Contains(t, call.Error, `"data.id"`, "the error names the field that was read")
		})
	}
}
