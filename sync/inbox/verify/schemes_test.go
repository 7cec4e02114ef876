package verify_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/inbox/verify"
)

func config(scheme verify.Scheme, secrets ...string) verify.Config {
	cfg := verify.Config{Scheme: scheme}
	for _, s := range secrets {
		cfg.Secrets = append(cfg.Secrets, []byte(s))
	}
	return cfg
}

// The example in the Standard Webhooks spec (and Svix's documentation).
func TestStandardPublishedVector(t *testing.T) {
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	cfg := config(verify.Standard, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")

	ev, err := verify.Verify(cfg, h, []byte(`{"test": 2432232314}`), time.Unix(1614265330, 0))
	require.NoError(t, err)
	assert.Equal(t, verify.Event{ID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Timestamp: time.Unix(1614265330, 0).UTC()}, ev)

	cfg.Secrets = [][]byte{[]byte("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")}
	_, err = verify.Verify(cfg, h, []byte(`{"test": 2432232314}`), time.Unix(1614265330, 0))
	require.NoError(t, err, "a secret without the whsec_ prefix is all base64")
}

// The example in GitHub's "Validating webhook deliveries".
func TestGitHubPublishedVector(t *testing.T) {
	h := http.Header{}
	h.Set("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
	h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	_, err := verify.Verify(config(verify.GitHub, "It's a Secret to Everybody"), h, []byte("Hello, World!"), time.Now())
	require.NoError(t, err)
}

func TestStripeSignatureHeader(t *testing.T) {
	const secret = "whsec_stripeSecretA"
	right, wrong := stripeV1(secret, ts, body), stripeV1("whsec_other", ts, body)
	tests := []struct {
		name    string
		header  string
		wantErr error
	}{
		{"only the second v1 matches", fmt.Sprintf("t=%d,v1=%s,v1=%s,v0=%s", ts, wrong, right, wrong), nil},
		{"any order, unknown fields", fmt.Sprintf("v0=%s,v1=%s,scheme=x=y,t=%d,v1=%s", right, wrong, ts, right), nil},
		{"upper-case hex", fmt.Sprintf("t=%d,v1=%X", ts, mac([]byte(secret), fmt.Sprintf("%d.%s", ts, body))), nil},
		{"undecodable v1 beside a good one", fmt.Sprintf("t=%d,v1=zz,v1=%s", ts, right), nil},
		{"no v1 matches", fmt.Sprintf("t=%d,v1=%s,v1=%s", ts, wrong, wrong), verify.ErrBadSignature},
		{"only v0", fmt.Sprintf("t=%d,v0=%s", ts, right), verify.ErrBadSignature},
		{"no timestamp", "v1=" + right, verify.ErrBadSignature},
		{"two timestamps", fmt.Sprintf("t=%d,t=%d,v1=%s", ts, ts, right), verify.ErrBadSignature},
		{"item without =", fmt.Sprintf("t=%d,v1=%s,junk", ts, right), verify.ErrBadSignature},
		{"timestamp signed differently", fmt.Sprintf("t=+%d,v1=%s", ts, right), verify.ErrBadSignature},
		{"empty", "", verify.ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Stripe-Signature": {tt.header}}
			_, err := verify.Verify(config(verify.Stripe, secret), h, []byte(body), time.Unix(ts, 0))
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}

func TestStandardSignatureList(t *testing.T) {
	secret := "whsec_" + b64([]byte("standard-key-A-0123456789abcdef"))
	right := standardV1(secret, "msg_1", ts, body)
	wrong := standardV1("whsec_"+b64([]byte("other")), "msg_1", ts, body)
	rightSig := right[len("v1,"):]
	tests := []struct {
		name    string
		header  string
		wantErr error
	}{
		{"unknown version, then wrong, then right", "v1a," + rightSig + " " + wrong + " " + right, nil},
		{"extra spaces", "  " + wrong + "   " + right + " ", nil},
		{"only unknown versions", "v1a," + rightSig + " v2," + rightSig, verify.ErrBadSignature},
		{"no comma", "v1" + rightSig, verify.ErrBadSignature},
		{"none matches", wrong + " " + wrong, verify.ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("webhook-id", "msg_1")
			h.Set("webhook-timestamp", fmt.Sprint(ts))
			h.Set("webhook-signature", tt.header)
			_, err := verify.Verify(config(verify.Standard, secret), h, []byte(body), time.Unix(ts, 0))
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}

func TestStandardNeedsIDAndTimestamp(t *testing.T) {
	secret := "whsec_" + b64([]byte("standard-key-A-0123456789abcdef"))
	for _, header := range []string{"webhook-id", "webhook-timestamp"} {
		t.Run(header, func(t *testing.T) {
			h := http.Header{}
			h.Set("webhook-id", "msg_1")
			h.Set("webhook-timestamp", fmt.Sprint(ts))
			h.Set("webhook-signature", standardV1(secret, "msg_1", ts, body))
			h.Del(header)
			_, err := verify.Verify(config(verify.Standard, secret), h, []byte(body), time.Unix(ts, 0))
			require.ErrorIs(t, err, verify.ErrMissingSignature, "%s is signed, so it is needed to verify", header)
		})
	}
}

func TestGitHubEventID(t *testing.T) {
	tests := []struct {
		name, delivery, hook, want string
	}{
		{"delivery and hook", "d-1", "77", "d-1:77"},
		{"delivery alone", "d-1", "", "d-1"},
		{"hook alone", "", "77", ""},
		{"neither", "", "", ""},
	}
	const secret = "gh-secret-A"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("X-Hub-Signature-256", "sha256="+fmt.Sprintf("%x", mac([]byte(secret), body)))
			if tt.delivery != "" {
				h.Set("X-GitHub-Delivery", tt.delivery)
			}
			if tt.hook != "" {
				h.Set("X-GitHub-Hook-ID", tt.hook)
			}
			ev, err := verify.Verify(config(verify.GitHub, secret), h, []byte(body), time.Now())
			if tt.want == "" {
				require.ErrorIs(t, err, verify.ErrNoEventID)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, ev.ID)
		})
	}
}

func TestVerifyNoEventID(t *testing.T) {
	byName := map[string]fixture{}
	for _, f := range fixtures() {
		byName[f.name] = f
	}
	tests := []struct {
		name, fixture, body, dropHeader string
	}{
		{"stripe body without id", "stripe", `{"type":"invoice.paid"}`, ""},
		{"stripe id that is not a string", "stripe", `{"id":{"x":1}}`, ""},
		{"stripe body that is not JSON", "stripe", `id=evt_1`, ""},
		{"stripe body with trailing data", "stripe", `{"id":"evt_1"} {}`, ""},
		{"shopify without webhook id", "shopify", body, "X-Shopify-Webhook-Id"},
		{"github without delivery", "github", body, "X-GitHub-Delivery"},
		{"hmac path absent", "hmac hex with timestamp and id path", `{"data":{}}`, ""},
		{"hmac path through an array", "hmac hex with timestamp and id path", `{"data":[{"event_id":"x"}]}`, ""},
		{"hmac id header absent", "hmac base64 with id header", body, "X-Event-Id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := byName[tt.fixture]
			h := f.sign(f.secrets[0], ts, tt.body)
			h.Del(tt.dropHeader)
			_, err := verify.VerifyRequest(f.config(f.secrets[0]), hookReq, h, []byte(tt.body), time.Unix(ts, 0))
			require.ErrorIs(t, err, verify.ErrNoEventID)
		})
	}
}

func TestHMACIDHeaderFallsBackToPath(t *testing.T) {
	cfg := config(verify.HMAC, "k")
	cfg.Header, cfg.Encoding, cfg.IDHeader, cfg.IDPath = "X-Sig", "base64", "X-Event-Id", "n"
	h := http.Header{"X-Sig": {b64(mac([]byte("k"), `{"n":12345678901234567890}`))}}

	ev, err := verify.Verify(cfg, h, []byte(`{"n":12345678901234567890}`), time.Now())
	require.NoError(t, err)
	assert.Equal(t, "12345678901234567890", ev.ID, "a numeric id keeps every digit")

	h.Set("X-Event-Id", "from-header")
	ev, err = verify.Verify(cfg, h, []byte(`{"n":12345678901234567890}`), time.Now())
	require.NoError(t, err)
	assert.Equal(t, "from-header", ev.ID)
}

func TestConfigValidate(t *testing.T) {
	hmacCfg := func(change func(*verify.Config)) verify.Config {
		cfg := config(verify.HMAC, "k")
		cfg.Header, cfg.Encoding, cfg.IDHeader = "X-Sig", "hex", "X-Id"
		change(&cfg)
		return cfg
	}
	tests := []struct {
		name    string
		cfg     verify.Config
		wantErr bool
	}{
		{"stripe", config(verify.Stripe, "whsec_x"), false},
		{"standard", config(verify.Standard, "whsec_"+b64([]byte("k"))), false},
		{"hmac", hmacCfg(func(*verify.Config) {}), false},
		{"hubspot", config(verify.HubSpot, "hs-secret"), false},
		{"unknown scheme", config("paypal", "k"), true},
		{"no secret", config(verify.GitHub), true},
		{"empty secret", config(verify.Shopify, "k", ""), true},
		{"negative tolerance", func() verify.Config { c := config(verify.Stripe, "k"); c.Tolerance = -time.Second; return c }(), true},
		{"standard secret not base64", config(verify.Standard, "whsec_not base64!"), true},
		{"standard secret empty after prefix", config(verify.Standard, "whsec_"), true},
		{"hmac without header", hmacCfg(func(c *verify.Config) { c.Header = "" }), true},
		{"hmac unknown encoding", hmacCfg(func(c *verify.Config) { c.Encoding = "base32" }), true},
		{"hmac without id", hmacCfg(func(c *verify.Config) { c.IDHeader = "" }), true},
		{"hmac id path with empty segment", hmacCfg(func(c *verify.Config) { c.IDPath = "data..id" }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if !tt.wantErr {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, verify.ErrBadConfig)
			_, err = verify.Verify(tt.cfg, http.Header{}, nil, time.Now())
			require.ErrorIs(t, err, verify.ErrBadConfig, "Verify refuses a bad config too")
			assert.NotContains(t, err.Error(), "not base64!", "the secret stays out of the message")
		})
	}
}
