package connector

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/redact"
)

// holdingGate lets every call go and records the holds asked of it.
type holdingGate struct {
	mu    sync.Mutex
	holds []string
	for_  []time.Duration
}

func (g *holdingGate) Wait(context.Context) (func(*http.Response), error) {
	return func(*http.Response) {}, nil
}

func (g *holdingGate) HeldFor() time.Duration { return 0 }

func (g *holdingGate) Hold(d time.Duration, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holds, g.for_ = append(g.holds, reason), append(g.for_, d)
}

// presetAnswering is one preset's service on a provider that answers every
// call but a token request with status, header and body.
func presetAnswering(t *testing.T, preset string, status int, header http.Header, body string) (*HTTP, *holdingGate) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/services/oauth2/token" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"00Dx!tok","instance_url":"` + "http://" + r.Host + `","token_type":"Bearer"}`))
			return
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	file := "services:\n  p:\n    preset: " + preset + "\n    base_url: " + srv.URL + "\n    headers: {A: b}\n" +
		"    auth: {client_id: a, client_secret: b}\n    objects:\n      contact: {remote: Account}\n"
	if preset != "salesforce" {
		file = "services:\n  p:\n    preset: " + preset + "\n    base_url: " + srv.URL + "\n    headers: {A: b}\n    objects:\n      contact: {}\n"
	}
	g := &holdingGate{}
	return NewHTTP("p", loadServices(t, file)["p"], redact.New(nil), nil).WithGate(g), g
}

// The presets read their providers' refusals that mean "later" as
// temporary, with nothing done (no lookup needed), and hold every call to
// the service: Salesforce's 403 REQUEST_LIMIT_EXCEEDED ("Status Codes and
// Error Responses",
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm),
// HubSpot's 423 and 477 ("Error handling",
// https://developers.hubspot.com/docs/api-reference/error-handling) and
// its 429 for the daily limit ("API usage guidelines",
// https://developers.hubspot.com/docs/developer-tooling/platform/usage-guidelines).
// Other answers of the same statuses keep what their status says.
func TestPresetsReadTheirProvidersRefusalsThatMeanLater(t *testing.T) {
	retryAfter := func(s string) http.Header { return http.Header{"Retry-After": {s}} }
	for _, tc := range []struct {
		name, preset string
		status       int
		header       http.Header
		body         string
		class        Class
		ambiguous    bool
		quota        bool
		wait         time.Duration // the call's RetryAfter
		hold         string        // the gate's hold reason, "" for none
	}{
		{"salesforce org out of API requests", "salesforce", 403, nil,
			`[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]`,
			Temporary, false, true, time.Hour, "403 Forbidden: the org's API requests for the last 24 hours are used up"},
		{"salesforce too many long calls at once", "salesforce", 403, nil,
			`[{"message":"ConcurrentRequests (Concurrent API Requests) Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]`,
			Temporary, false, false, 20 * time.Second, "403 Forbidden: Salesforce has too many long calls of the org's under way"},
		{"salesforce 403 for a field the user may not write stays permanent", "salesforce", 403, nil,
			`[{"message":"insufficient access rights on object id","errorCode":"INSUFFICIENT_ACCESS_OR_READONLY"}]`,
			Permanent, false, false, 0, ""},
		{"hubspot 423 locked", "hubspot", 423, nil, `{"status":"error","message":"Locked"}`,
			Temporary, false, false, 2 * time.Second, "423 Locked: HubSpot has locked the account's records for a moment"},
		{"hubspot 423 with a longer Retry-After", "hubspot", 423, retryAfter("5"), `{"status":"error","message":"Locked"}`,
			Temporary, false, false, 5 * time.Second, "423 Locked: HubSpot"},
		{"hubspot 477 migration, Retry-After 30", "hubspot", 477, retryAfter("30"), `{"status":"error","message":"Migration in progress"}`,
			Temporary, false, false, 30 * time.Second, "477: HubSpot is migrating the account's data"},
		{"hubspot 429 daily limit", "hubspot", 429, nil,
			`{"status":"error","message":"You have reached your daily limit.","errorType":"RATE_LIMIT","policyName":"DAILY"}`,
			Temporary, false, true, time.Hour, "429 Too Many Requests: the account's daily API limit is reached"},
		{"hubspot 429 ten-secondly limit is the rate limiter's", "hubspot", 429, retryAfter("1"),
			`{"status":"error","message":"You have reached your ten_secondly_rolling limit.","errorType":"RATE_LIMIT","policyName":"TEN_SECONDLY_ROLLING"}`,
			Temporary, false, false, time.Second, ""},
		{"hubspot 400 stays permanent", "hubspot", 400, nil, `{"status":"error","message":"Property values were not valid"}`,
			Permanent, false, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, gate := presetAnswering(t, tc.preset, tc.status, tc.header, tc.body)
			rec := Record{LocalType: "contact", LocalID: "1", Key: "contact_1", Payload: []byte(`{"email":"a@example.com","first_name":"Ada","last_name":"Lovelace","Name":"Acme"}`)}
			var call Call
			if tc.preset == "salesforce" {
				call = conn.Upsert(context.Background(), rec)
			} else {
				call = conn.Create(context.Background(), rec, "")
			}
			require.Equal(t, tc.status, call.HTTPCode, call.Error)
			require.Equal(t, tc.class, call.Class, call.Error)
			require.Equal(t, tc.ambiguous, call.Ambiguous, "nothing was done: no lookup needed")
			require.Equal(t, tc.quota, call.Quota, "the allowance is spent: the link keeps its attempts")
			require.Equal(t, tc.wait, call.RetryAfter)
			require.Equal(t, tc.hold != "", call.Held, "an answer that holds the service is not a sign the provider is down")
			if tc.hold == "" {
				require.Empty(t, gate.holds, "no hold of every call for this answer")
				return
			}
			require.Len(t, gate.holds, 1)
			require.Contains(t, gate.holds[0], tc.hold)
			require.Equal(t, tc.wait, gate.for_[0], "every call waits as long as the link")
		})
	}
}
