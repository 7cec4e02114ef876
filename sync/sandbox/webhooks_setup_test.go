package sandbox

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// delivery is one webhook POST as the receiver saw it.
type delivery struct {
	path   string
	header http.Header
	body   []byte
}

// receiver is a real HTTP endpoint for webhooks that answers from a script
// (then 200) and records every delivery.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	statuses []int // answers to the next deliveries, in order
	hang     chan struct{}
	got      []delivery
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	rc := &receiver{statuses: statuses}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, delivery{path: r.URL.Path, header: r.Header.Clone(), body: body})
	status, hang := http.StatusOK, rc.hang
	if len(rc.statuses) > 0 {
		status, rc.statuses = rc.statuses[0], rc.statuses[1:]
	}
	rc.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}
	w.WriteHeader(status)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// hookBundle is a provider under httptest that sends webhooks to a receiver.
type hookBundle struct {
	*bundle
	rcv    *receiver
	secret string
}

// setupHooks turns webhooks on with cfg, filling URL, a Secret of the
// provider's scheme and a 5ms Backoff where cfg leaves them empty.
func setupHooks(t *testing.T, newProvider func(Options) *Provider, cfg WebhookConfig, statuses ...int) *hookBundle {
	t.Helper()
	h := &hookBundle{rcv: newReceiver(t, statuses...), bundle: setup(t, newProvider, Options{})}
	if cfg.URL == "" {
		cfg.URL = h.rcv.srv.URL + "/hook"
	}
	if cfg.Secret == "" && h.p.spec.collection == "deals" {
		cfg.Secret = NewStandardSecret()
	} else if cfg.Secret == "" {
		cfg.Secret = "whsec_stripe_test_secret"
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 5 * time.Millisecond
	}
	h.secret = cfg.Secret
	require.NoError(t, h.p.SendWebhooks(cfg))
	t.Cleanup(h.p.Close) // runs before the servers close
	return h
}

// flush waits for every delivery and returns what the receiver got, each
// delivery verified against the provider's signature scheme.
func (h *hookBundle) flush(t *testing.T) []delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, h.p.Flush(ctx), "deliveries still pending: %+v", h.p.WebhookStats())
	got := h.rcv.deliveries()
	for _, d := range got {
		require.Equal(t, "application/json", d.header.Get("Content-Type"))
		if h.p.spec.collection == "deals" {
			verifyStandard(t, h.secret, d)
		} else {
			verifyStripe(t, h.secret, d)
		}
	}
	return got
}

// verifyStripe follows Stripe's manual verification: split Stripe-Signature
// on commas, take t and the v1 values, HMAC-SHA256 "t.body" with the secret
// as-is, compare in hex, and refuse a timestamp off by more than 5 minutes.
func verifyStripe(t *testing.T, secret string, d delivery) {
	t.Helper()
	var ts string
	var v1 []string
	for _, part := range strings.Split(d.header.Get("Stripe-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = append(v1, v)
		}
	}
	require.NotEmpty(t, ts, "Stripe-Signature %q has no t", d.header.Get("Stripe-Signature"))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(d.body)))
	require.Contains(t, v1, hex.EncodeToString(mac.Sum(nil)), "no v1 signature matches the body")
	requireFresh(t, ts)
}

// verifyStandard follows the Standard Webhooks spec: the key is the base64
// after "whsec_", the signed content "id.timestamp.body", the signatures a
// space-separated list of "v1,<base64>".
func verifyStandard(t *testing.T, secret string, d delivery) {
	t.Helper()
	enc, ok := strings.CutPrefix(secret, "whsec_")
	require.True(t, ok, "secret %q", secret)
	key, err := base64.StdEncoding.DecodeString(enc)
	require.NoError(t, err)
	id, ts := d.header.Get("webhook-id"), d.header.Get("webhook-timestamp")
	require.NotEmpty(t, id, "webhook-id")
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(d.body)))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	var sigs []string
	for _, s := range strings.Fields(d.header.Get("webhook-signature")) {
		if v, sig, _ := strings.Cut(s, ","); v == "v1" {
			sigs = append(sigs, sig)
		}
	}
	require.Contains(t, sigs, want, "no v1 signature matches the body")
	requireFresh(t, ts)
}

func requireFresh(t *testing.T, ts string) {
	t.Helper()
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err, "timestamp %q", ts)
	require.WithinDuration(t, time.Now(), time.Unix(sec, 0), 5*time.Minute)
}

// eventOf decodes a delivery's body and names its event id: the
// webhook-id header (Standard Webhooks) or the body's "id" (Stripe).
func eventOf(t *testing.T, d delivery) (id string, ev map[string]any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(d.body, &ev), "body %s", d.body)
	if id = d.header.Get("webhook-id"); id == "" {
		id, _ = ev["id"].(string)
	}
	require.NotEmpty(t, id, "event id of %s", d.body)
	return id, ev
}

// byType groups deliveries by event type; deliveries run concurrently, so
// their order is not the order of the changes.
func byType(t *testing.T, got []delivery) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, d := range got {
		_, ev := eventOf(t, d)
		typ, _ := ev["type"].(string)
		out[typ] = append(out[typ], ev)
	}
	return out
}
