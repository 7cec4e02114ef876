package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// oauthProvider is a fake OAuth 2.0 provider on one host, as Salesforce is:
// a token endpoint and a resource. The token endpoint follows RFC 6749
// (https://datatracker.ietf.org/doc/html/rfc6749): the client credentials
// grant (§4.4) and the refresh-token grant (§6), the client authenticated
// by a Basic header of its URL-encoded id and secret or by form parameters
// (§2.3.1), answers as in §5.1 and errors as in §5.2. Like Salesforce's
// client-credentials answer, it sends no expires_in unless told to
// (https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_client_credentials_flow.htm).
// The resource refuses a token it does not know as Salesforce's REST API
// does: 401 [{"message":"Session expired or invalid","errorCode":"INVALID_SESSION_ID"}].
type oauthProvider struct {
	*httptest.Server
	id, secret string
	inParams   bool          // the client must authenticate in the form body, else by a Basic header
	expiresIn  int           // 0: the answer gives no expiry
	delay      time.Duration // before each token answer

	requests atomic.Int32 // token requests
	mu       sync.Mutex
	refresh  string            // the refresh token it accepts now; rotated on every use
	failWith func() (int, any) // a scripted answer to every token request; nil: none
	sessions map[string]bool   // access tokens the resource accepts
	scopes   []string          // the scope of each token request
}

const tokenPath = "/services/oauth2/token"

func newOAuthProvider(t *testing.T) *oauthProvider {
	p := &oauthProvider{id: "syncdesk app", secret: "cs-4d1f+8a/2e", sessions: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+tokenPath, p.token)
	mux.HandleFunc("/services/data/", p.resource)
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *oauthProvider) token(w http.ResponseWriter, r *http.Request) {
	n := p.requests.Add(1)
	p.mu.Lock()
	delay := p.delay
	p.mu.Unlock()
	time.Sleep(delay)
	_ = r.ParseForm()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scopes = append(p.scopes, r.PostForm.Get("scope"))
	if p.failWith != nil {
		status, body := p.failWith()
		writeJSON(w, status, body)
		return
	}
	id, secret, ok := r.BasicAuth()
	id, _ = url.QueryUnescape(id)
	secret, _ = url.QueryUnescape(secret)
	if p.inParams {
		id, secret, ok = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret"), r.Header.Get("Authorization") == ""
	}
	if !ok || id != p.id || secret != p.secret { // a careless endpoint that quotes what it was sent
		writeJSON(w, 400, map[string]string{"error": "invalid_client", "error_description": "client secret " + secret + " is not valid"})
		return
	}
	answer := map[string]any{"access_token": fmt.Sprintf("00D!sess.%d", n), "token_type": "Bearer", "instance_url": p.URL}
	switch r.PostForm.Get("grant_type") {
	case "client_credentials":
	case "refresh_token":
		if got := r.PostForm.Get("refresh_token"); got != p.refresh || got == "" {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "refresh token " + got + " expired"})
			return
		}
		p.refresh = fmt.Sprintf("rt.%d.rotated", n)
		answer["refresh_token"] = p.refresh
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	if p.expiresIn > 0 {
		answer["expires_in"] = p.expiresIn
	}
	p.sessions[answer["access_token"].(string)] = true
	writeJSON(w, 200, answer)
}

func (p *oauthProvider) resource(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	ok = ok && p.sessions[tok]
	p.mu.Unlock()
	if !ok {
		writeJSON(w, 401, []map[string]string{{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}})
		return
	}
	writeJSON(w, 200, map[string]bool{"done": true})
}

// set changes the provider's behaviour between requests.
func (p *oauthProvider) set(change func()) {
	p.mu.Lock()
	change()
	p.mu.Unlock()
}

// endSessions makes the resource refuse every token issued so far.
func (p *oauthProvider) endSessions() {
	p.mu.Lock()
	clear(p.sessions)
	p.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// oauthService is a service whose OAuth 2.0 client secret comes from the
// environment, as configured ones do.
func oauthService(t *testing.T, p *oauthProvider, secret string, a config.Auth) config.Service {
	t.Setenv("SYNCDESK_TEST_CLIENT_SECRET", secret)
	a.Type, a.TokenURL, a.ClientID, a.ClientSecret = config.AuthOAuth2, tokenPath, p.id, "${SYNCDESK_TEST_CLIENT_SECRET}"
	return config.Service{BaseURL: p.URL, Timeout: 5 * time.Second, Auth: a}
}

// call sends one request to the provider's resource with c's auth.
func call(ctx context.Context, c *Credentials, p *oauthProvider) (status int, token string, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/services/data/v62.0/sobjects/Account", nil)
	if token, err = c.Apply(ctx, req); err != nil {
		return 0, "", err
	}
	resp, err := p.Client().Do(req)
	if err != nil {
		return 0, token, err
	}
	resp.Body.Close()
	return resp.StatusCode, token, nil
}

func requireCall(t *testing.T, c *Credentials, p *oauthProvider) string {
	t.Helper()
	status, tok, err := call(context.Background(), c, p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, "the resource accepted the token")
	return tok
}

// result is what one worker's call came to.
type result struct {
	status int
	token  string
	err    string
}

// callResult is call for a worker goroutine, which must not stop a test.
func callResult(c *Credentials, p *oauthProvider) result {
	status, tok, err := call(context.Background(), c, p)
	res := result{status: status, token: tok}
	if err != nil {
		res.err = err.Error()
	}
	return res
}

func authError(t *testing.T, err error) *AuthError {
	t.Helper()
	var ae *AuthError
	require.True(t, errors.As(err, &ae), "want an *AuthError, got %v", err)
	return ae
}

func TestBasicAuthAndHeadersOnly(t *testing.T) {
	t.Setenv("SYNCDESK_TEST_PASSWORD", "pw-7c3e9b")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		if !ok || user != "ana" || password != "pw-7c3e9b" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	r := redact.New(nil)
	c := NewCredentials(config.Service{BaseURL: srv.URL, Auth: config.Auth{Type: config.AuthBasic, Username: "ana",
		Password: "${SYNCDESK_TEST_PASSWORD}"}}, srv.Client(), r)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	tok, err := c.Apply(context.Background(), req)
	require.NoError(t, err)
	require.Empty(t, tok, "basic auth has no token to refuse")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the server took the Basic credential")
	require.NotContains(t, r.Known("quoted: pw-7c3e9b"), "pw-7c3e9b", "the redactor knows the password")

	req, _ = http.NewRequest(http.MethodGet, srv.URL, nil)
	_, err = NewCredentials(config.Service{BaseURL: srv.URL}, srv.Client(), r).Apply(context.Background(), req)
	require.NoError(t, err)
	require.Empty(t, req.Header.Get("Authorization"), "type \"\" leaves auth to the static headers")
}

func TestClientCredentialsInHeaderOrParams(t *testing.T) {
	for _, inParams := range []bool{false, true} {
		p := newOAuthProvider(t)
		p.inParams = inParams
		svc := oauthService(t, p, p.secret, config.Auth{Params: inParams, Scopes: []string{"api", "refresh_token"}})
		c := NewCredentials(svc, p.Client(), redact.New(nil))
		require.Equal(t, "00D!sess.1", requireCall(t, c, p), "params=%v", inParams)
		require.Equal(t, []string{"api refresh_token"}, p.scopes, "the scopes are sent space-separated")

		svc.Auth.Params = !inParams // the style the endpoint does not take
		_, _, err := call(context.Background(), NewCredentials(svc, p.Client(), redact.New(nil)), p)
		require.True(t, authError(t, err).Permanent, "params=%v: the other style is refused: %v", !inParams, err)
	}
}

func TestTokenIsRenewedBeforeItExpires(t *testing.T) {
	for _, tc := range []struct {
		name            string
		expiresIn       int
		lifetime        time.Duration
		keep, renewedBy time.Duration // still used after keep; replaced by renewedBy
	}{
		{"expires_in 1h", 3600, 0, 58 * time.Minute, 59*time.Minute + 30*time.Second},
		{"expires_in 60s: renewed after three quarters", 60, 0, 44 * time.Second, 46 * time.Second},
		{"no expires_in, lifetime 2h (Salesforce)", 0, 2 * time.Hour, 118 * time.Minute, 119*time.Minute + 30*time.Second},
		{"expires_in wins over lifetime", 3600, 24 * time.Hour, 58 * time.Minute, 59*time.Minute + 30*time.Second},
	} {
		p := newOAuthProvider(t)
		p.expiresIn = tc.expiresIn
		c := NewCredentials(oauthService(t, p, p.secret, config.Auth{Lifetime: tc.lifetime}), p.Client(), redact.New(nil))
		fake := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
		c.clock = fake
		first := requireCall(t, c, p)
		fake.Advance(tc.keep)
		require.Equal(t, first, requireCall(t, c, p), tc.name)
		fake.Advance(tc.renewedBy - tc.keep)
		require.NotEqual(t, first, requireCall(t, c, p), tc.name)
		require.EqualValues(t, 2, p.requests.Load(), tc.name)
	}

	p := newOAuthProvider(t)
	c := NewCredentials(oauthService(t, p, p.secret, config.Auth{}), p.Client(), redact.New(nil))
	fake := clock.NewFake(time.Now())
	c.clock = fake
	first := requireCall(t, c, p)
	fake.Advance(10000 * time.Hour)
	require.Equal(t, first, requireCall(t, c, p), "no expiry and lifetime 0: kept until refused")
	require.EqualValues(t, 1, p.requests.Load())
}

func TestWorkersShareOneTokenRequest(t *testing.T) {
	p := newOAuthProvider(t)
	p.delay = 100 * time.Millisecond // long enough for every worker to arrive while it is fetched
	c := NewCredentials(oauthService(t, p, p.secret, config.Auth{}), p.Client(), redact.New(nil))
	start := make(chan struct{})
	results := make([]result, 64)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			<-start
			results[i] = callResult(c, p)
		})
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 1, p.requests.Load(), "64 workers, one token request")
	for _, res := range results {
		require.Equal(t, result{status: 200, token: "00D!sess.1"}, res)
	}

	// A worker that found no token an instant before a fetch ended starts
	// a fetch of its own: it must take the token that fetch brought.
	b, err := c.fetch(context.Background())
	require.NoError(t, err)
	require.Equal(t, "00D!sess.1", b.token)
	require.EqualValues(t, 1, p.requests.Load(), "a fetch that finds a fresh token asks for none")
}

// Thirty-two workers see the provider refuse the token at once; half of
// them tell so only after the new token came, as a slow worker would.
func TestA401SeenByManyWorkersRefreshesOnce(t *testing.T) {
	p := newOAuthProvider(t)
	c := NewCredentials(oauthService(t, p, p.secret, config.Auth{}), p.Client(), redact.New(nil))
	old := requireCall(t, c, p)
	p.endSessions()

	var refused, retried sync.WaitGroup
	refused.Add(32)
	refreshed := make(chan struct{})
	var once sync.Once
	first, again := make([]result, 32), make([]result, 32)
	for i := range again {
		retried.Go(func() {
			first[i] = callResult(c, p)
			refused.Done()
			refused.Wait() // every worker has seen its 401
			if i%2 == 1 {
				<-refreshed
			} else {
				defer once.Do(func() { close(refreshed) })
			}
			c.Refused(first[i].token)
			again[i] = callResult(c, p)
		})
	}
	retried.Wait()
	require.EqualValues(t, 2, p.requests.Load(), "the first token, and exactly one refresh")
	for i := range again {
		require.Equal(t, result{status: 401, token: old}, first[i], "worker %d", i)
		require.Equal(t, result{status: 200, token: "00D!sess.2"}, again[i], "worker %d", i)
	}
}

func TestRefusedCredentialsArePermanentInWords(t *testing.T) {
	p := newOAuthProvider(t)
	r := redact.New(nil)
	c := NewCredentials(oauthService(t, p, "wrong-cs-3b8e1f", config.Auth{}), p.Client(), r)
	_, _, err := call(context.Background(), c, p)
	ae := authError(t, err)
	require.True(t, ae.Permanent)
	require.Contains(t, ae.Error(), "the token endpoint refused syncdesk's client credentials: invalid_client")
	require.NotContains(t, ae.Error(), "wrong-cs-3b8e1f", "the endpoint quoted the secret; the message must not")

	t.Setenv("SYNCDESK_TEST_REFRESH", "rt.stale.9d4c")
	svc := oauthService(t, p, p.secret, config.Auth{RefreshToken: "${SYNCDESK_TEST_REFRESH}"})
	_, _, err = call(context.Background(), NewCredentials(svc, p.Client(), r), p)
	ae = authError(t, err)
	require.True(t, ae.Permanent)
	require.Contains(t, ae.Error(), "the token endpoint refused syncdesk's refresh token: invalid_grant")
	require.NotContains(t, ae.Error(), "rt.stale.9d4c")
}

func TestAnEndpointDownOrSlowIsTemporary(t *testing.T) {
	p := newOAuthProvider(t)
	p.inParams = true
	c := NewCredentials(oauthService(t, p, p.secret, config.Auth{Params: true}), p.Client(), redact.New(nil))
	first := requireCall(t, c, p)
	p.set(func() {
		p.failWith = func() (int, any) { // a proxy that quotes the request it failed to pass on
			return 503, map[string]string{"message": "upstream down", "request": "client_secret=" + url.QueryEscape(p.secret) + " bearer=" + first}
		}
	})
	c.Refused(first)
	_, _, err := call(context.Background(), c, p)
	ae := authError(t, err)
	require.False(t, ae.Permanent)
	require.Contains(t, ae.Error(), "the token endpoint is unavailable (HTTP 503 Service Unavailable")
	require.NotContains(t, ae.Error(), p.secret)
	require.NotContains(t, ae.Error(), url.QueryEscape(p.secret))
	require.NotContains(t, ae.Error(), first)

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	svc := oauthService(t, p, p.secret, config.Auth{})
	svc.Auth.TokenURL = gone.URL + tokenPath
	_, _, err = call(context.Background(), NewCredentials(svc, p.Client(), redact.New(nil)), p)
	require.False(t, authError(t, err).Permanent)
	require.Contains(t, err.Error(), "the token endpoint could not be reached")

	slow := newOAuthProvider(t)
	slow.delay = 2 * time.Second
	svc = oauthService(t, slow, slow.secret, config.Auth{})
	svc.Timeout = 200 * time.Millisecond
	_, _, err = call(context.Background(), NewCredentials(svc, slow.Client(), redact.New(nil)), slow)
	require.False(t, authError(t, err).Permanent)
	require.Contains(t, err.Error(), "the token endpoint could not be reached")
}

// A worker that stops waiting does not fail the fetch the others wait for,
// even when its request is the one that started it.
func TestAWorkerGivingUpLeavesTheFetchToTheOthers(t *testing.T) {
	p := newOAuthProvider(t)
	p.delay = 300 * time.Millisecond
	c := NewCredentials(oauthService(t, p, p.secret, config.Auth{}), p.Client(), redact.New(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := call(ctx, c, p)
	require.False(t, authError(t, err).Permanent)
	require.Contains(t, err.Error(), "gave up waiting for a token")
	require.Equal(t, "00D!sess.1", requireCall(t, c, p))
	require.EqualValues(t, 1, p.requests.Load(), "the second worker took the token the first one's fetch brought")
}

func TestRotatedRefreshTokenIsKeptAndEveryTokenLearned(t *testing.T) {
	p := newOAuthProvider(t)
	p.refresh = "rt.first.5e7a"
	t.Setenv("SYNCDESK_TEST_REFRESH", p.refresh)
	r := redact.New(nil)
	c := NewCredentials(oauthService(t, p, p.secret, config.Auth{RefreshToken: "${SYNCDESK_TEST_REFRESH}"}), p.Client(), r)
	first := requireCall(t, c, p)
	c.Refused(first)
	second := requireCall(t, c, p)
	require.NotEqual(t, first, second, "the rotated refresh token (rt.1.rotated) was used: the first one is no longer taken")

	plain := redact.New(nil)
	for _, secret := range []string{first, second, "rt.1.rotated", "rt.2.rotated", "rt.first.5e7a"} {
		line := "provider said: " + secret + " is bad"
		require.Equal(t, line, plain.Text(line), "precondition: %s is not masked by its shape alone", secret)
		require.NotContains(t, r.Text(line), secret, "the redactor learned %s", secret)
	}
}
