package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func FuzzStripeHeader(f *testing.F) {
	for _, s := range []string{
		"t=1492774577,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd,v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39",
		"v1=00,t=1,v1=ff,scheme=x=y",
		"t=1,t=2",
		"t=-1099511627776,v1=",
		"t=99999999999999999999",
		"t=+1,v1=zz",
		",,=,",
		"",
		"t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := parseStripeHeader(s)
		if err != nil {
			require.ErrorIs(t, err, ErrBadSignature)
			return
		}
		require.Contains(t, ","+s+",", ",t="+sh.t+",", "the signed t is the raw text of the header's t item")
		n, err := strconv.ParseInt(sh.t, 10, 64)
		require.NoError(t, err)
		require.Equal(t, n, sh.ts.Unix())
		require.LessOrEqual(t, len(sh.v1), strings.Count(s, "v1="))
	})
}

func FuzzStandardSignatures(f *testing.F) {
	for _, s := range []string{
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
		"v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,AAAA v2,BBBB",
		"  v1,  v1,, ,v1 v1,=\tv1,AA==",
		"v1,not base64!",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sigs := parseStandardSignatures(s)
		require.LessOrEqual(t, len(sigs), strings.Count(s, "v1,"), "only v1 entries count")
	})
}

// fuzzConfigs are one config per scheme for FuzzVerify; every one of them
// reads the same fuzzed headers.
var fuzzConfigs = []Config{
	{Scheme: Stripe, Secrets: [][]byte{[]byte("whsec_a")}},
	{Scheme: Standard, Secrets: [][]byte{[]byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("key")))}},
	{Scheme: GitHub, Secrets: [][]byte{[]byte("a"), []byte("b")}},
	{Scheme: Shopify, Secrets: [][]byte{[]byte("a")}},
	{Scheme: HMAC, Secrets: [][]byte{[]byte("a")}, Header: "X-Sig", Encoding: "hex", Prefix: "sha256=",
		TimestampHeader: "X-Ts", IDPath: "data.id"},
	{Scheme: HMAC, Secrets: [][]byte{[]byte("a")}, Header: "X-Sig", Encoding: "base64", IDHeader: "X-Id", IDPath: "id"},
	{Scheme: HubSpot, Secrets: [][]byte{[]byte("a"), []byte("b")}},
}

// fuzzRequest is the request every fuzzed delivery arrives as, and
// fuzzSignedURI the same URL as HubSpot signs it (%3A and %2C decoded).
var (
	fuzzRequest   = Request{Method: "POST", URL: "https://desk.example.com/hooks/crm?p=%3A1%2C2%7E"}
	fuzzSignedURI = "https://desk.example.com/hooks/crm?p=:1,2%7E"
)

// fuzzSign writes a correct signature for cfg into h, computed here from
// each provider's algorithm, so the fuzzer also reaches the code that runs
// after a signature verifies.
func fuzzSign(cfg Config, h http.Header, body []byte) {
	sum := func(key []byte, msg ...string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(strings.Join(msg, "")))
		return m.Sum(nil)
	}
	b64, hx := base64.StdEncoding.EncodeToString, hex.EncodeToString
	id, ts := h.Get("Webhook-Id"), h.Get("X-Ts")
	switch {
	case cfg.Scheme == Stripe:
		h.Set("Stripe-Signature", "t="+ts+",v1="+hx(sum(cfg.Secrets[0], ts, ".", string(body))))
	case cfg.Scheme == Standard:
		h.Set("Webhook-Timestamp", ts)
		h.Set("Webhook-Signature", "v1,"+b64(sum([]byte("key"), id, ".", ts, ".", string(body))))
	case cfg.Scheme == GitHub:
		h.Set("X-Hub-Signature-256", "sha256="+hx(sum(cfg.Secrets[1], string(body))))
	case cfg.Scheme == Shopify:
		h.Set("X-Shopify-Hmac-Sha256", b64(sum(cfg.Secrets[0], string(body))))
	case cfg.Scheme == HubSpot:
		h.Set("X-HubSpot-Signature-v3", b64(sum(cfg.Secrets[1], fuzzRequest.Method, fuzzSignedURI, string(body), ts)))
	case cfg.Encoding == "hex":
		h.Set("X-Sig", "sha256="+hx(sum(cfg.Secrets[0], ts, ".", string(body))))
	default:
		h.Set("X-Sig", b64(sum(cfg.Secrets[0], string(body))))
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(uint8(0), false, "t=1,v1=00", "1", "msg_1", []byte(`{"id":"evt_1"}`))
	f.Add(uint8(0), true, "", "1700000000", "", []byte(`{"id":"evt_1","type":"x"}`))
	f.Add(uint8(1), true, "", "1700000000", "msg_1", []byte(`{"type":"x"}`))
	f.Add(uint8(1), false, "v1a,AA== v1,AA==", "-5", "msg_1", []byte("{}"))
	f.Add(uint8(2), true, "", "", "d-1", []byte("Hello, World!"))
	f.Add(uint8(3), false, "%%%", "", "", []byte(nil))
	f.Add(uint8(4), true, "", "1700000000", "", []byte(`{"data":{"id":12}}`))
	f.Add(uint8(5), true, "", "", "", []byte(`{"id":"a"} trailing`))
	f.Add(uint8(6), true, "", "1700000000000", "", []byte(`[{"eventId":1,"subscriptionType":"contact.creation"}]`))
	f.Add(uint8(6), true, "", "1700000000000", "", []byte(`[{"eventId":1},{"eventId":2}]`))
	f.Add(uint8(6), false, "AAAA", "-1099511627776000", "", []byte(`[]`))
	f.Fuzz(func(t *testing.T, which uint8, sign bool, sig, ts, id string, body []byte) {
		cfg := fuzzConfigs[int(which)%len(fuzzConfigs)]
		h := http.Header{}
		for _, name := range []string{"Stripe-Signature", "Webhook-Signature", "X-Hub-Signature-256", "X-Shopify-Hmac-Sha256", "X-Sig", "X-HubSpot-Signature-v3"} {
			h.Set(name, sig)
		}
		for _, name := range []string{"Webhook-Id", "X-GitHub-Delivery", "X-GitHub-Hook-ID", "X-Shopify-Webhook-Id", "X-Id"} {
			h.Set(name, id)
		}
		h.Set("Webhook-Timestamp", ts)
		h.Set("X-Ts", ts)
		h.Set("X-HubSpot-Request-Timestamp", ts)
		now := time.Unix(1700000000, 0)
		if sign {
			fuzzSign(cfg, h, body)
			now = fuzzNow(cfg, ts, now)
		}
		ev, err := VerifyRequest(cfg, fuzzRequest, h, body, now)
		if err == nil {
			if cfg.Scheme != HubSpot { // its ids are per event, in the body: the inbox reads them
				require.NotEmpty(t, ev.ID, "success always carries an event id")
			}
			return
		}
		sentinels := []error{ErrMissingSignature, ErrBadSignature, ErrStaleTimestamp, ErrNoEventID}
		require.True(t, slicesAny(sentinels, func(s error) bool { return errors.Is(err, s) }), "unexpected error %v", err)
		if !sign {
			require.False(t, errors.Is(err, ErrNoEventID) || errors.Is(err, ErrStaleTimestamp),
				"an unsigned delivery got past the signature check: %v", err)
		}
	})
}

// fuzzNow is the moment a signed timestamp is fresh: the timestamp itself,
// in seconds or (HubSpot) milliseconds, when it parses within bounds.
func fuzzNow(cfg Config, ts string, fallback time.Time) time.Time {
	n, err := strconv.ParseInt(ts, 10, 64)
	switch {
	case err != nil:
		return fallback
	case cfg.Scheme == HubSpot && n > -maxUnix*1000 && n < maxUnix*1000:
		return time.UnixMilli(n)
	case n > -maxUnix && n < maxUnix:
		return time.Unix(n, 0)
	}
	return fallback
}

func slicesAny(errs []error, ok func(error) bool) bool {
	for _, e := range errs {
		if ok(e) {
			return true
		}
	}
	return false
}

func FuzzEventIDPath(f *testing.F) {
	for _, seed := range []struct{ body, path string }{
		{`{"id":"evt_1"}`, "id"},
		{`{"data":{"event_id":"ev-9"}}`, "data.event_id"},
		{`{"data":{"event_id":12345678901234567890}}`, "data.event_id"},
		{`{"data":[{"event_id":"x"}]}`, "data.0.event_id"},
		{`{"id":null,"id":"last"}`, "id"},
		{`{"a.b":"dotted"}`, "a.b"},
		{`{"id":"x"} {}`, "id"},
		{`  {"id":"\ud800\u00e9"}  `, "id"},
		{`[[[[[[[[[[]]]]]]]]]]`, "id"},
		{`"id"`, ""},
	} {
		f.Add([]byte(seed.body), seed.path)
	}
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		got := lookup(parseJSON(body), path)
		require.Equal(t, lookupOracle(body, path), got, "body %q path %q", body, path)
	})
}

// lookupOracle finds a dotted path a different way: one json.Unmarshal into
// raw messages per level.
func lookupOracle(body []byte, path string) string {
	raw := json.RawMessage(body)
	for key := range strings.SplitSeq(path, ".") {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return ""
		}
		raw = obj[key]
	}
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') && json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}
