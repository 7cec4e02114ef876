package stripemock

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// post sends a form-encoded POST to stripe-mock.
func post(t *testing.T, srv *Server, path string, form url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(APIKey, "")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

func TestStartServesOnLoopbackAndValidates(t *testing.T) {
	srv := Start(t)
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), "loopback only, got %s", srv.URL)

	status, body := post(t, srv, "/v1/customers", url.Values{"email": {"a@example.com"}, "metadata[k]": {"v"}})
	require.Equal(t, http.StatusOK, status, body)
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &obj))
	require.Equal(t, "customer", obj["object"])
	require.Equal(t, "a@example.com", obj["email"], "it echoes what it was sent")

	status, body = post(t, srv, "/v1/customers", url.Values{"no_such_param": {"1"}})
	require.Equal(t, http.StatusBadRequest, status, "an unknown parameter is refused: %s", body)
	status, body = post(t, srv, "/v1/payment_intents", url.Values{"currency": {"usd"}})
	require.Equal(t, http.StatusBadRequest, status, "a missing amount is refused: %s", body)
	require.Contains(t, body, "'amount' is required")
}

func TestTwoAtOnceDoNotCollide(t *testing.T) {
	a, b := Start(t), Start(t)
	require.NotEqual(t, a.URL, b.URL)
	for _, srv := range []*Server{a, b} {
		status, body := post(t, srv, "/v1/customers", url.Values{"name": {"x"}})
		require.Equal(t, http.StatusOK, status, body)
	}
}
