package connector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// One OAuth 2.0 token serves every worker of a service. It is fetched when
// there is none, when it expires within renewMargin, and after the provider
// answers 401 to it (Refused); it lives in memory only, and the redactor
// learns it the moment it arrives.
//
// x/oauth2 fetches it (clientcredentials.Config.Token, or
// oauth2.Config.TokenSource for the refresh-token grant), but its
// ReuseTokenSource does not hold it: that cache cannot be told that the
// provider refused a token, measures expiry on the wall clock with a fixed
// 10 s margin, and makes every caller wait on its mutex past the caller's
// own deadline. So Credentials keeps the token itself, and a singleflight
// group makes the callers that find none share one fetch, each still free
// to give up when its own context ends.

// renewMargin is how long before its expiry a token is replaced, so that a
// request never leaves with a token that dies on the way. A token that
// lives less than four margins is replaced after three quarters of its life.
const renewMargin = time.Minute

// defaultFetchTimeout bounds a token request when the service sets no timeout.
const defaultFetchTimeout = 10 * time.Second

// Credentials adds a service's auth to its requests. Safe for concurrent use.
type Credentials struct {
	basic          bool // HTTP basic with user and password
	user, password string
	grant          *grant // OAuth 2.0; nil otherwise
	client         *http.Client
	redact         *redact.Redactor
	clock          clock.Clock
	lifetime       time.Duration // of a token whose answer gives no expiry
	timeout        time.Duration // of one token request
	flight         singleflight.Group

	mu      sync.Mutex // guards current and refresh
	current *bearer    // nil when a token must be fetched
	refresh string     // the refresh token, as last rotated
}

// bearer is a token in use and when to stop using it.
type bearer struct {
	header  string    // the Authorization header's value
	token   string    // the access token alone
	renewAt time.Time // zero: until the provider refuses it
}

// grant asks the token endpoint for a token. refresh is the current refresh
// token (the refresh-token grant's; ignored by client credentials).
type grant struct {
	name  string // the credential it presents, for messages
	fetch func(ctx context.Context, refresh string) (*oauth2.Token, error)
}

// NewCredentials builds them from svc.Auth (type "", basic, oauth2; ${VAR}
// expanded via config.ExpandEnv). client is the HTTP client for the token
// endpoint (loopback in tests); r learns every token fetched (r.AddSecrets)
// so that a provider echoing a token back has it masked. A token_url that is
// a path is relative to svc.BaseURL, like every endpoint path.
func NewCredentials(svc config.Service, client *http.Client, r *redact.Redactor) *Credentials {
	a := svc.Auth
	r.AddSecrets(svc.Secrets()...)
	c := &Credentials{client: client, redact: r, clock: clock.Real{}, lifetime: a.Lifetime, timeout: svc.Timeout}
	if c.timeout <= 0 {
		c.timeout = defaultFetchTimeout
	}
	if c.client == nil {
		c.client = http.DefaultClient
	}
	switch a.Type {
	case config.AuthBasic:
		c.basic, c.user, c.password = true, expandAuth(a.Username), expandAuth(a.Password)
	case config.AuthOAuth2:
		c.refresh = expandAuth(a.RefreshToken)
		c.grant = newGrant(a, resolveTokenURL(svc.BaseURL, expandAuth(a.TokenURL)), c.refresh != "")
	}
	return c
}

// newGrant is the refresh-token grant when there is a refresh token, else
// client credentials.
func newGrant(a config.Auth, endpoint string, refreshing bool) *grant {
	style := oauth2.AuthStyleInHeader
	if a.Params {
		style = oauth2.AuthStyleInParams
	}
	id, secret := expandAuth(a.ClientID), expandAuth(a.ClientSecret)
	if refreshing {
		conf := &oauth2.Config{ClientID: id, ClientSecret: secret, Scopes: a.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: endpoint, AuthStyle: style}}
		return &grant{name: "refresh token", fetch: func(ctx context.Context, refresh string) (*oauth2.Token, error) {
			// A token with no access token is expired: the source refreshes at once.
			return conf.TokenSource(ctx, &oauth2.Token{RefreshToken: refresh}).Token()
		}}
	}
	conf := &clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: endpoint, Scopes: a.Scopes, AuthStyle: style}
	return &grant{name: "client credentials", fetch: func(ctx context.Context, _ string) (*oauth2.Token, error) {
		return conf.Token(ctx)
	}}
}

// expandAuth reads the ${VAR}s of an auth setting; validation saw them set.
func expandAuth(s string) string {
	v, _ := config.ExpandEnv(s)
	return v
}

// resolveTokenURL resolves a token_url given as a path against the base URL.
func resolveTokenURL(base, u string) string {
	if strings.HasPrefix(u, "/") {
		return strings.TrimSuffix(base, "/") + u
	}
	return u
}

// Apply sets the Authorization header (Basic, or Bearer with the current
// token, fetching one when there is none or it expires within a margin). It
// returns the token used, to hand to Refused ("" without OAuth 2.0). An
// error is an *AuthError.
func (c *Credentials) Apply(ctx context.Context, req *http.Request) (token string, err error) {
	switch {
	case c.basic:
		req.SetBasicAuth(c.user, c.password)
		return "", nil
	case c.grant == nil:
		return "", nil
	}
	b, err := c.bearer(ctx)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", b.header)
	return b.token, nil
}

// Refused tells that the provider answered 401 to a request sent with
// token: the token is dropped so that the next Apply fetches a new one —
// once, however many workers saw the 401 at the same time, because only the
// first finds the token it was refused still current. (An endpoint that
// hands out the very token just refused gets asked again on the next 401.)
func (c *Credentials) Refused(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if token != "" && c.current != nil && c.current.token == token {
		c.current = nil
	}
}

// bearer returns the current token, fetching one if it must.
func (c *Credentials) bearer(ctx context.Context) (*bearer, error) {
	if b := c.valid(); b != nil {
		return b, nil
	}
	ch := c.flight.DoChan("token", func() (any, error) { return c.fetch(ctx) })
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*bearer), nil
	case <-ctx.Done():
		return nil, &AuthError{Message: "gave up waiting for a token from the token endpoint: " + ctx.Err().Error()}
	}
}

// valid returns the current token unless it must be renewed.
func (c *Credentials) valid() *bearer {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.current
	if b == nil || !b.renewAt.IsZero() && !c.clock.Now().Before(b.renewAt) {
		return nil
	}
	return b
}

// fetch asks the token endpoint for a token and keeps it. It runs once for
// all the callers waiting, so it runs apart from the context of the one
// that started it (whose end must not fail the others), bounded by the
// service's timeout.
func (c *Credentials) fetch(ctx context.Context) (*bearer, error) {
	if b := c.valid(); b != nil {
		return b, nil // a fetch that ended a moment ago brought one
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	// x/oauth2 takes its HTTP client from the context, by this key only.
	ctx = context.WithValue(ctx, oauth2.HTTPClient, c.client)
	c.mu.Lock()
	refresh := c.refresh
	c.mu.Unlock()
	tok, err := c.grant.fetch(ctx, refresh)
	if err != nil {
		return nil, c.refusal(err)
	}
	return c.keep(tok), nil
}

// keep makes tok the current token, after the redactor has learned it and
// any rotated refresh token.
func (c *Credentials) keep(tok *oauth2.Token) *bearer {
	c.redact.AddSecrets(tok.AccessToken, tok.RefreshToken)
	now := c.clock.Now()
	b := &bearer{header: tok.Type() + " " + tok.AccessToken, token: tok.AccessToken}
	if life := c.life(tok); life > 0 {
		b.renewAt = now.Add(life - min(renewMargin, life/4))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.current = b
	if tok.RefreshToken != "" {
		c.refresh = tok.RefreshToken
	}
	return b
}

// life is how long tok lasts from now: as its answer's expires_in says, else
// the configured lifetime (Salesforce's answer has no expires_in), 0 for
// "until refused". x/oauth2 turned expires_in into a wall-clock time a
// moment ago; what is left of it is measured on the same wall clock, so
// that the configured clock (a fake one in tests) can take it from here.
func (c *Credentials) life(tok *oauth2.Token) time.Duration {
	if tok.Expiry.IsZero() {
		return c.lifetime
	}
	if left := time.Until(tok.Expiry); left > 0 {
		return left
	}
	return c.lifetime // an expires_in of 0 or less says nothing usable
}

// AuthError is a token endpoint's refusal or failure, in words a person can
// act on. It holds no cause to unwrap on purpose: x/oauth2's errors carry
// the endpoint's whole answer, which may quote a secret back.
type AuthError struct {
	// Permanent is true when the endpoint refused syncdesk's credentials or
	// request, so that asking again cannot help until a person fixes them.
	Permanent bool
	Message   string
}

// Error returns the message.
func (e *AuthError) Error() string { return e.Message }

// temporaryCodes are the RFC 6749 error codes that mean "ask again later"
// (https://datatracker.ietf.org/doc/html/rfc6749#section-4.1.2.1), whatever
// status they come with.
var temporaryCodes = map[string]bool{"server_error": true, "temporarily_unavailable": true, "slow_down": true}

// answerExcerpt bounds what of a token endpoint's answer reaches a message.
const answerExcerpt = 160

// refusal turns a failed token request into an AuthError, every word that
// came from the endpoint redacted.
func (c *Credentials) refusal(err error) *AuthError {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		var ue *url.Error
		if errors.As(err, &ue) {
			return &AuthError{Message: "the token endpoint could not be reached: " + c.redact.TextPrefix(err.Error(), answerExcerpt*2)}
		}
		return &AuthError{Message: "the token endpoint gave no usable token: " + c.redact.TextPrefix(err.Error(), answerExcerpt)}
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	why := c.why(re, status)
	if status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || temporaryCodes[re.ErrorCode] {
		return &AuthError{Message: "the token endpoint is unavailable (" + why + "); syncdesk will ask again"}
	}
	return &AuthError{Permanent: true, Message: fmt.Sprintf("the token endpoint refused syncdesk's %s: %s", c.subject(re.ErrorCode), why)}
}

// why is the endpoint's reason: its error code and description, else its
// status and the start of its answer.
func (c *Credentials) why(re *oauth2.RetrieveError, status int) string {
	if re.ErrorCode != "" {
		s := re.ErrorCode
		if re.ErrorDescription != "" {
			s += " (" + re.ErrorDescription + ")"
		}
		return c.redact.TextPrefix(foldSpace(s), answerExcerpt)
	}
	s := fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	if body := foldSpace(string(re.Body)); body != "" {
		s += ": " + c.redact.TextPrefix(body, answerExcerpt)
	}
	return s
}

// subject is what of syncdesk's an error code says the endpoint refused.
func (c *Credentials) subject(code string) string {
	switch code {
	case "invalid_client", "unauthorized_client":
		return "client credentials"
	case "invalid_scope":
		return "requested scopes"
	}
	return c.grant.name
}

// foldSpace folds an answer's whitespace so a message stays one line.
func foldSpace(s string) string { return strings.Join(strings.Fields(s), " ") }
