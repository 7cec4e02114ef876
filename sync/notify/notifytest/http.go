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
	"net"
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
	return receiverAt(t, "127.0.0.1:0", h)
}

// receiverAt is a receiver listening on addr.
func receiverAt(t testing.TB, addr string, h HandlerFunc) *Receiver {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err, "listen on %s", addr)
	rc := &Receiver{handle: h}
	rc.Server = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	rc.Listener = l
	rc.Start()
	t.Cleanup(rc.Close)
	return rc
}

// Hanging starts a receiver that takes every request and never answers:
// each waits until its sender gives up, or the test ends.
func Hanging(t testing.TB) *Receiver {
	t.Helper()
	release := make(chan struct{})
	rc := NewReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ []byte) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return false
	})
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for its requests
	return rc
}

// RefusedAddr is an address on 127.0.0.1 where nothing listens: a
// connection to it is refused, until something listens there again.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
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

// Requests are the requests answered so far, in the order their answers
// ended (a request is kept once its handler has said whether it verified).
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
	return WebhookAt(t, secret, "127.0.0.1:0")
}

// WebhookAt is Webhook listening on addr: a receiver that was down (see
// RefusedAddr) coming back.
func WebhookAt(t testing.TB, secret, addr string) *Receiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	return receiverAt(t, addr, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
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
