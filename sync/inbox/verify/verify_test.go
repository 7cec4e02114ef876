package verify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/inbox/verify"
)

// The signers below follow each provider's published algorithm and share no
// code with the package, so a bug there cannot hide a bug here.

const (
	body = `{"id":"evt_1","type":"invoice.paid","data":{"event_id":"ev-9"}}`
	ts   = int64(1700000000)
)

func mac(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// standardKey decodes a Standard Webhooks secret: "whsec_" then base64.
func standardKey(secret string) []byte {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	return key
}

func stripeV1(secret string, t int64, body string) string {
	return hex.EncodeToString(mac([]byte(secret), fmt.Sprintf("%d.%s", t, body)))
}

func standardV1(secret, id string, t int64, body string) string {
	return "v1," + b64(mac(standardKey(secret), fmt.Sprintf("%s.%d.%s", id, t, body)))
}

// hookReq is the request every fixture's delivery arrives as; only HubSpot
// signs it. Its query holds escapes HubSpot decodes (%3A, %2C) and one it
// does not (%7E).
var hookReq = verify.Request{Method: "POST", URL: "https://desk.example.com/hooks/crm?portal=%3A12%2C3&x=%7E"}

// hubspotBody is a list of one event, as HubSpot sends them.
const hubspotBody = `[{"eventId":100,"subscriptionId":7,"portalId":62515,"occurredAt":1700000000000,` +
	`"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":123}]`

// hubspotURI decodes the characters listed in HubSpot's "Validating
// requests" table, one by one.
func hubspotURI(uri string) string {
	for _, c := range ":/?@!$'()*,;" {
		uri = strings.ReplaceAll(uri, fmt.Sprintf("%%%02X", c), string(c))
	}
	return uri
}

// hubspotSign signs as HubSpot's v3 does: base64 of HMAC-SHA256 over method
// + decoded URI + body + the timestamp header (milliseconds).
func hubspotSign(secret, method, uri, body string, ms int64) http.Header {
	h := http.Header{}
	h.Set("X-HubSpot-Request-Timestamp", fmt.Sprint(ms))
	h.Set("X-HubSpot-Signature-v3", b64(mac([]byte(secret), method+hubspotURI(uri)+body+fmt.Sprint(ms))))
	return h
}

// fixture is one scheme's configuration and signer.
type fixture struct {
	name        string
	cfg         verify.Config // Secrets are set by each test
	secrets     [2]string     // A and B
	sigHeader   string
	malformed   string
	timestamped bool
	body        string // the delivery's body; "" means the shared body
	sign        func(secret string, t int64, body string) http.Header
	want        verify.Event // Timestamp is set by the test when timestamped
}

func (f fixture) payload() string {
	if f.body != "" {
		return f.body
	}
	return body
}

func (f fixture) config(secrets ...string) verify.Config {
	cfg := f.cfg
	for _, s := range secrets {
		cfg.Secrets = append(cfg.Secrets, []byte(s))
	}
	return cfg
}

func fixtures() []fixture {
	return []fixture{{
		name: "stripe", cfg: verify.Config{Scheme: verify.Stripe},
		secrets:   [2]string{"whsec_stripeSecretA", "whsec_stripeSecretB"},
		sigHeader: "Stripe-Signature", malformed: "t=yesterday,v1=00", timestamped: true,
		sign: func(s string, t int64, b string) http.Header {
			return http.Header{"Stripe-Signature": {fmt.Sprintf("t=%d,v1=%s", t, stripeV1(s, t, b))}}
		},
		want: verify.Event{ID: "evt_1", Type: "invoice.paid"},
	}, {
		name: "standard", cfg: verify.Config{Scheme: verify.Standard},
		secrets: [2]string{
			"whsec_" + b64([]byte("standard-key-A-0123456789abcdef")),
			"whsec_" + b64([]byte("standard-key-B-0123456789abcdef")),
		},
		sigHeader: "Webhook-Signature", malformed: "v1,!!!not-base64", timestamped: true,
		sign: func(s string, t int64, b string) http.Header {
			h := http.Header{}
			h.Set("webhook-id", "msg_1")
			h.Set("webhook-timestamp", fmt.Sprint(t))
			h.Set("webhook-signature", standardV1(s, "msg_1", t, b))
			return h
		},
		want: verify.Event{ID: "msg_1", Type: "invoice.paid"},
	}, {
		name: "github", cfg: verify.Config{Scheme: verify.GitHub},
		secrets:   [2]string{"gh-secret-A", "gh-secret-B"},
		sigHeader: "X-Hub-Signature-256", malformed: "sha1=0123abcd",
		sign: func(s string, _ int64, b string) http.Header {
			h := http.Header{}
			h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac([]byte(s), b)))
			h.Set("X-GitHub-Delivery", "d-1")
			h.Set("X-GitHub-Hook-ID", "77")
			h.Set("X-GitHub-Event", "push")
			return h
		},
		want: verify.Event{ID: "d-1:77", Type: "push"},
	}, {
		name: "shopify", cfg: verify.Config{Scheme: verify.Shopify},
		secrets:   [2]string{"shpss_A", "shpss_B"},
		sigHeader: "X-Shopify-Hmac-Sha256", malformed: "%%%",
		sign: func(s string, _ int64, b string) http.Header {
			h := http.Header{}
			h.Set("X-Shopify-Hmac-Sha256", b64(mac([]byte(s), b)))
			h.Set("X-Shopify-Webhook-Id", "sh-1")
			h.Set("X-Shopify-Topic", "orders/create")
			return h
		},
		want: verify.Event{ID: "sh-1", Type: "orders/create"},
	}, {
		name: "hmac hex with timestamp and id path",
		cfg: verify.Config{Scheme: verify.HMAC, Header: "X-Signature", Encoding: "hex",
			Prefix: "sha256=", TimestampHeader: "X-Timestamp", IDPath: "data.event_id"},
		secrets:   [2]string{"hmac-A", "hmac-B"},
		sigHeader: "X-Signature", malformed: "sha256=zz", timestamped: true,
		sign: func(s string, t int64, b string) http.Header {
			h := http.Header{}
			h.Set("X-Timestamp", fmt.Sprint(t))
			h.Set("X-Signature", "sha256="+hex.EncodeToString(mac([]byte(s), fmt.Sprintf("%d.%s", t, b))))
			return h
		},
		want: verify.Event{ID: "ev-9", Type: "invoice.paid"},
	}, {
		name: "hmac base64 with id header",
		cfg: verify.Config{Scheme: verify.HMAC, Header: "X-Sig", Encoding: "base64",
			IDHeader: "X-Event-Id"},
		secrets:   [2]string{"hmac-A", "hmac-B"},
		sigHeader: "X-Sig", malformed: "not base64!",
		sign: func(s string, _ int64, b string) http.Header {
			h := http.Header{}
			h.Set("X-Sig", b64(mac([]byte(s), b)))
			h.Set("X-Event-Id", "e-5")
			return h
		},
		want: verify.Event{ID: "e-5", Type: "invoice.paid"},
	}, {
		name: "hubspot", cfg: verify.Config{Scheme: verify.HubSpot},
		secrets:   [2]string{"hs-client-secret-A", "hs-client-secret-B"},
		sigHeader: "X-HubSpot-Signature-v3", malformed: "not base64!", timestamped: true,
		body: hubspotBody,
		sign: func(s string, t int64, b string) http.Header {
			return hubspotSign(s, hookReq.Method, hookReq.URL, b, t*1000)
		},
		// HubSpot's ids are per event, inside the list: the inbox reads them.
		want: verify.Event{},
	}}
}

func (f fixture) wantEvent() verify.Event {
	want := f.want
	if f.timestamped {
		want.Timestamp = time.Unix(ts, 0).UTC()
	}
	return want
}

func TestVerifyAcceptsSignedDelivery(t *testing.T) {
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			ev, err := verify.VerifyRequest(f.config(f.secrets[0]), hookReq, f.sign(f.secrets[0], ts, f.payload()), []byte(f.payload()), time.Unix(ts, 0))
			require.NoError(t, err)
			assert.Equal(t, f.wantEvent(), ev)
		})
	}
}

func TestVerifyRefuses(t *testing.T) {
	tests := []struct {
		name    string
		change  func(f fixture, h http.Header, body []byte) (http.Header, []byte)
		wantErr error
	}{
		{"one body byte changed", func(f fixture, h http.Header, b []byte) (http.Header, []byte) {
			b[len(b)-2] ^= 0x01
			return h, b
		}, verify.ErrBadSignature},
		{"wrong secret", func(f fixture, _ http.Header, b []byte) (http.Header, []byte) {
			return f.sign(f.secrets[1], ts, string(b)), b
		}, verify.ErrBadSignature},
		{"missing signature header", func(f fixture, h http.Header, b []byte) (http.Header, []byte) {
			h.Del(f.sigHeader)
			return h, b
		}, verify.ErrMissingSignature},
		{"malformed signature header", func(f fixture, h http.Header, b []byte) (http.Header, []byte) {
			h.Set(f.sigHeader, f.malformed)
			return h, b
		}, verify.ErrBadSignature},
	}
	for _, f := range fixtures() {
		for _, tt := range tests {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				good := f.sign(f.secrets[0], ts, f.payload())
				h, b := tt.change(f, f.sign(f.secrets[0], ts, f.payload()), []byte(f.payload()))
				_, err := verify.VerifyRequest(f.config(f.secrets[0]), hookReq, h, b, time.Unix(ts, 0))
				require.ErrorIs(t, err, tt.wantErr)
				// The message may name what failed, never what would have passed.
				assert.NotContains(t, err.Error(), f.secrets[0])
				assert.NotContains(t, err.Error(), good.Get(f.sigHeader))
			})
		}
	}
}

func TestVerifyTimestampTolerance(t *testing.T) {
	tests := []struct {
		name      string
		tolerance time.Duration
		age       int64 // now minus the signed timestamp, in seconds
		wantErr   error
	}{
		{"299 s old", 0, 299, nil},
		{"300 s old, the limit", 0, 300, nil},
		{"301 s old", 0, 301, verify.ErrStaleTimestamp},
		{"299 s ahead", 0, -299, nil},
		{"301 s ahead", 0, -301, verify.ErrStaleTimestamp},
		{"a day old", 0, 86400, verify.ErrStaleTimestamp},
		{"11 s old, tolerance 10 s", 10 * time.Second, 11, verify.ErrStaleTimestamp},
		{"11 s ahead, tolerance 10 s", 10 * time.Second, -11, verify.ErrStaleTimestamp},
	}
	for _, f := range fixtures() {
		if !f.timestamped {
			continue
		}
		for _, tt := range tests {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				cfg := f.config(f.secrets[0])
				cfg.Tolerance = tt.tolerance
				_, err := verify.VerifyRequest(cfg, hookReq, f.sign(f.secrets[0], ts, f.payload()), []byte(f.payload()), time.Unix(ts+tt.age, 0))
				require.ErrorIs(t, err, tt.wantErr)
			})
		}
	}
}

func TestVerifyRotation(t *testing.T) {
	for _, f := range fixtures() {
		for _, signer := range f.secrets {
			t.Run(f.name, func(t *testing.T) {
				cfg := f.config(f.secrets[0], f.secrets[1])
				ev, err := verify.VerifyRequest(cfg, hookReq, f.sign(signer, ts, f.payload()), []byte(f.payload()), time.Unix(ts, 0))
				require.NoError(t, err, "a delivery signed with either secret verifies during a rotation")
				assert.Equal(t, f.wantEvent(), ev)
			})
		}
	}
}
