// Package notifytest holds real receivers for the alert channels, for
// tests: HTTP and SMTP servers on 127.0.0.1 that record what they get. The
// webhook receiver verifies each delivery with the official Standard
// Webhooks library, the Slack one answers as Slack's incoming webhooks do,
// the mail server (emersion/go-smtp) takes STARTTLS and AUTH PLAIN. Each
// stops with the test.
package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// Request is one request a receiver got.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
	// Verified says the Standard Webhooks signature was checked and held
	// (Webhook's receivers only).
	Verified bool
}

// HandlerFunc answers a request whose body has been read; it says whether
// the request counts as verified.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, body []byte) (verified bool)

// Receiver is a real HTTP server on 127.0.0.1 that records each request
// and answers with its handler.
type Receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []Request
	handle HandlerFunc
}

// NewReceiver starts a receiver answering with h (nil: 204), closed with
// the test.
func NewReceiver(t testing.TB, h HandlerFunc) *Receiver {
	t.Helper()
	rc := &Receiver{handle: h}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	h := rc.handle
	rc.mu.Unlock()
	verified := false
	if h == nil {
		w.WriteHeader(http.StatusNoContent)
	} else {
		verified = h(w, r, body)
	}
	rc.mu.Lock()
	rc.got = append(rc.got, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Verified: verified})
	rc.mu.Unlock()
}

// Handle makes h the receiver's answer from now on.
func (rc *Receiver) Handle(h HandlerFunc) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.handle = h
}

// Requests are the requests received so far, in order.
func (rc *Receiver) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.got...)
}

// Verified are the requests whose signature held, in order.
func (rc *Receiver) Verified() []Request {
	var out []Request
	for _, r := range rc.Requests() {
		if r.Verified {
			out = append(out, r)
		}
	}
	return out
}

// Answer is a handler that answers status and body.
func Answer(status int, body string) HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
		return false
	}
}

// Webhook starts a receiver that verifies every delivery with the
// official Standard Webhooks library under secret ("whsec_…"): 204 to
// what holds, 401 with the library's reason to anything else.
func Webhook(t testing.TB, secret string) *Receiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	return NewReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return false
		}
		w.WriteHeader(http.StatusNoContent)
		return true
	})
}

// Event is a webhook delivery's body as a receiver reads it.
type Event struct {
	Type      string         `json:"type"`
	Timestamp string         `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// Event reads the request's body as a webhook event.
func (r Request) Event() (Event, error) {
	var e Event
	err := json.Unmarshal(r.Body, &e)
	return e, err
}
