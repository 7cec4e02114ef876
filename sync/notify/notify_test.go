package notify_test

import (
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/notify"
)

// The signing secret of the tests' webhook channels: "whsec_" and 32 bytes.
var (
	hookKey    = []byte("0123456789abcdef0123456789abcdef")
	hookSecret = "whsec_" + base64.StdEncoding.EncodeToString(hookKey)
)

// message is a notification as sync/alerts would send it.
func message() notify.Message {
	return notify.Message{
		ID: "ntf_12_1", Incident: 12, Rule: "service_paused", Subject: "crm", State: notify.Opened,
		Title: "crm paused for 12 minutes",
		Text:  "The CRM has refused every call since 10:02. Check its status page, then resume it on the Services page.",
		URL:   "https://desk.example.com/services/crm",
		At:    time.Date(2026, 12, 1, 10, 14, 0, 0, time.UTC),
	}
}

// request is one request a fake receiver got.
type request struct {
	header http.Header
	body   []byte
}

// receiver is a real HTTP server on 127.0.0.1 that records each request
// and answers with answer.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []request
	hand func(w http.ResponseWriter, r *http.Request, body []byte)
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *receiver {
	t.Helper()
	rc := &receiver{hand: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.got = append(rc.got, request{header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		rc.hand(w, r, body)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.got...)
}

// answer is a handler that answers status and body.
func answer(status int, body string) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// requirePermanent checks whether err says sending again cannot mend it.
func requirePermanent(t *testing.T, err error, permanent bool, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.Equal(t, permanent, errors.Is(err, notify.ErrPermanent), "is %q permanent? %v", err, msgAndArgs)
}
