package verify_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/inbox/verify"
)

// Each case signs a delivery as HubSpot would for one request and verifies
// it as received in another way; the reason must say what failed, in words.
func TestHubSpotSignature(t *testing.T) {
	const secretA, secretB = "hs-client-secret-A", "hs-client-secret-B"
	ms := ts * 1000
	signed := func(secret, method, uri, b string, at int64) func() http.Header {
		return func() http.Header { return hubspotSign(secret, method, uri, b, at) }
	}
	tests := []struct {
		name    string
		headers func() http.Header // as HubSpot signed
		req     verify.Request     // as received
		body    string
		wantErr error
		reason  string
	}{
		{"valid", signed(secretA, "POST", hookReq.URL, hubspotBody, ms), hookReq, hubspotBody, nil, ""},
		{"second secret of a rotation", signed(secretB, "POST", hookReq.URL, hubspotBody, ms), hookReq, hubspotBody, nil, ""},
		{"listed escapes received decoded", signed(secretA, "POST", hookReq.URL, hubspotBody, ms),
			verify.Request{Method: "POST", URL: "https://desk.example.com/hooks/crm?portal=:12,3&x=%7E"}, hubspotBody, nil, ""},
		{"an escape HubSpot does not decode, received decoded", signed(secretA, "POST", hookReq.URL, hubspotBody, ms),
			verify.Request{Method: "POST", URL: "https://desk.example.com/hooks/crm?portal=:12,3&x=~"}, hubspotBody,
			verify.ErrBadSignature, "signature matches no secret"},
		{"one body byte changed", signed(secretA, "POST", hookReq.URL, hubspotBody, ms), hookReq,
			hubspotBody[:len(hubspotBody)-3] + "4}]", verify.ErrBadSignature, "signature matches no secret"},
		{"another path", signed(secretA, "POST", hookReq.URL, hubspotBody, ms),
			verify.Request{Method: "POST", URL: "https://desk.example.com/hooks/other?portal=%3A12%2C3&x=%7E"}, hubspotBody,
			verify.ErrBadSignature, "signature matches no secret"},
		{"another query", signed(secretA, "POST", hookReq.URL, hubspotBody, ms),
			verify.Request{Method: "POST", URL: "https://desk.example.com/hooks/crm?portal=%3A12%2C4&x=%7E"}, hubspotBody,
			verify.ErrBadSignature, "signature matches no secret"},
		{"http where HubSpot called https", signed(secretA, "POST", hookReq.URL, hubspotBody, ms),
			verify.Request{Method: "POST", URL: "http://desk.example.com/hooks/crm?portal=%3A12%2C3&x=%7E"}, hubspotBody,
			verify.ErrBadSignature, "signature matches no secret"},
		{"another method", signed(secretA, "POST", hookReq.URL, hubspotBody, ms),
			verify.Request{Method: "PUT", URL: hookReq.URL}, hubspotBody, verify.ErrBadSignature, "signature matches no secret"},
		{"six minutes old", signed(secretA, "POST", hookReq.URL, hubspotBody, ms-360_000), hookReq, hubspotBody,
			verify.ErrStaleTimestamp, "signed 6m0s ago, tolerance 5m0s"},
		{"six minutes ahead", signed(secretA, "POST", hookReq.URL, hubspotBody, ms+360_000), hookReq, hubspotBody,
			verify.ErrStaleTimestamp, "signed 6m0s in the future, tolerance 5m0s"},
		{"timestamp in seconds, not milliseconds", signed(secretA, "POST", hookReq.URL, hubspotBody, ts), hookReq, hubspotBody,
			verify.ErrStaleTimestamp, "ago, tolerance 5m0s"},
		{"timestamp changed after signing", func() http.Header {
			h := hubspotSign(secretA, "POST", hookReq.URL, hubspotBody, ms)
			h.Set("X-HubSpot-Request-Timestamp", "1700000000001")
			return h
		}, hookReq, hubspotBody, verify.ErrBadSignature, "signature matches no secret"},
		{"timestamp not a number", func() http.Header {
			h := hubspotSign(secretA, "POST", hookReq.URL, hubspotBody, ms)
			h.Set("X-HubSpot-Request-Timestamp", "yesterday")
			return h
		}, hookReq, hubspotBody, verify.ErrBadSignature, "timestamp is not milliseconds since the epoch"},
		{"no timestamp header", func() http.Header {
			h := hubspotSign(secretA, "POST", hookReq.URL, hubspotBody, ms)
			h.Del("X-HubSpot-Request-Timestamp")
			return h
		}, hookReq, hubspotBody, verify.ErrMissingSignature, "no X-HubSpot-Request-Timestamp header"},
		{"no request to check against", signed(secretA, "POST", hookReq.URL, hubspotBody, ms), verify.Request{}, hubspotBody,
			verify.ErrBadConfig, "signs the request's method and URL, and none was given"},
	}
	cfg := config(verify.HubSpot, secretA, secretB)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := verify.VerifyRequest(cfg, tt.req, tt.headers(), []byte(tt.body), time.Unix(ts, 0))
			if tt.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, verify.Event{Timestamp: time.UnixMilli(ms).UTC()}, ev)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			assert.Contains(t, err.Error(), "hubspot webhook: ")
			assert.Contains(t, err.Error(), tt.reason)
			assert.NotContains(t, err.Error(), secretA)
		})
	}
}

// Verify, which knows no request, cannot check HubSpot's signature: it says
// so as a server fault instead of refusing the sender.
func TestHubSpotNeedsTheRequest(t *testing.T) {
	h := hubspotSign("k", "POST", hookReq.URL, hubspotBody, ts*1000)
	_, err := verify.Verify(config(verify.HubSpot, "k"), h, []byte(hubspotBody), time.Unix(ts, 0))
	require.ErrorIs(t, err, verify.ErrBadConfig)
}
