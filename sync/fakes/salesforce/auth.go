package salesforce

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The token endpoint follows the OAuth 2.0 client credentials flow: the app
// posts grant_type=client_credentials with its consumer key and secret, in
// the form or in an Authorization: Basic header, and gets an access token
// with instance_url, id, token_type, issued_at and signature — and no
// expires_in, which Salesforce does not send (clients must learn expiry
// from a 401).
// https://help.salesforce.com/apex/HTViewHelpDoc?id=xcloud.remoteaccess_oauth_client_credentials_flow.htm
// The refresh-token grant answers the same fields for a refresh token
// (client_secret optional there).
// https://help.salesforce.com/apex/HTViewHelpDoc?id=remoteaccess_oauth_refresh_token_flow.htm
// Errors are OAuth's {"error", "error_description"} with status 400.
// https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_flow_errors.htm

// token is an issued access token.
type token struct {
	client  string
	expires time.Time
}

// tokenAnswer is the token endpoint's successful answer.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	Signature   string `json:"signature"`
	Scope       string `json:"scope"`
	InstanceURL string `json:"instance_url"`
	ID          string `json:"id"`
	TokenType   string `json:"token_type"`
	IssuedAt    string `json:"issued_at"`
}

// oauthError is the token endpoint's error answer.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

var (
	errUnknownClient = &oauthError{"invalid_client_id", "client identifier invalid"}
	errBadSecret     = &oauthError{"invalid_client", "invalid client credentials"}
	errBadGrant      = &oauthError{"unsupported_grant_type", "grant type not supported"}
	errBadRefresh    = &oauthError{"invalid_grant", "expired access/refresh token"}
)

// serveToken grants a token, or says why not.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, oauthError{"invalid_request", "must use HTTP POST"})
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{"invalid_request", "malformed request body"})
		return
	}
	id, secret := clientCredentials(r)
	client, oerr := s.grantFor(r.PostForm, id, secret)
	if oerr != nil {
		writeJSON(w, http.StatusBadRequest, oerr)
		return
	}
	writeJSON(w, http.StatusOK, s.issue(client, instanceURL(r)))
}

// grantFor checks the grant and the client, and names the client a token
// goes to.
func (s *Server) grantFor(form url.Values, id, secret string) (string, *oauthError) {
	switch form.Get("grant_type") {
	case "client_credentials":
		return id, s.checkClient(id, secret, true)
	case "refresh_token":
		if oerr := s.checkClient(id, secret, secret != ""); oerr != nil {
			return "", oerr
		}
		s.mu.Lock()
		owner, ok := s.refresh[form.Get("refresh_token")]
		s.mu.Unlock()
		if !ok || owner != id {
			return "", errBadRefresh
		}
		return id, nil
	}
	return "", errBadGrant
}

// checkClient checks the consumer key and, when needSecret, its secret.
func (s *Server) checkClient(id, secret string, needSecret bool) *oauthError {
	for _, c := range s.opts.Clients {
		if c.ID != id {
			continue
		}
		if needSecret && subtle.ConstantTimeCompare([]byte(c.Secret), []byte(secret)) != 1 {
			return errBadSecret
		}
		return nil
	}
	return errUnknownClient
}

// secretOf is a known client's secret.
func (s *Server) secretOf(id string) string {
	for _, c := range s.opts.Clients {
		if c.ID == id {
			return c.Secret
		}
	}
	return ""
}

// clientCredentials reads the client's key and secret from a Basic header
// (each URL-encoded, RFC 6749 §2.3.1) or else from the form.
func clientCredentials(r *http.Request) (id, secret string) {
	if u, p, ok := r.BasicAuth(); ok {
		uid, err1 := url.QueryUnescape(u)
		psec, err2 := url.QueryUnescape(p)
		if err1 == nil && err2 == nil {
			return uid, psec
		}
		return u, p
	}
	return r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
}

// issue records a new token for client and builds the answer. The
// signature is, as documented, a Base64 HMAC-SHA256 of the identity URL
// and issued_at keyed with the client's secret.
func (s *Server) issue(client, instance string) tokenAnswer {
	now := s.now()
	access := s.orgID[:15] + "!" + randomToken()
	s.mu.Lock()
	s.tokens[access] = token{client: client, expires: now.Add(s.opts.TokenLifetime)}
	s.mu.Unlock()
	identity := instance + "/id/" + s.orgID + "/" + s.userID
	issued := strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(s.secretOf(client)))
	mac.Write([]byte(identity + issued))
	return tokenAnswer{
		AccessToken: access, Signature: base64.StdEncoding.EncodeToString(mac.Sum(nil)),
		Scope: "api", InstanceURL: instance, ID: identity, TokenType: "Bearer", IssuedAt: issued,
	}
}

// authorize checks the request's bearer token: a missing, unknown or
// expired one gets 401 INVALID_SESSION_ID, as the REST API answers.
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm
func (s *Server) authorize(r *http.Request) *failure {
	h := r.Header.Get("Authorization")
	// "OAuth" is the older spelling the REST API still takes.
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		tok, ok = strings.CutPrefix(h, "OAuth ")
	}
	s.mu.Lock()
	t, known := s.tokens[strings.TrimSpace(tok)]
	s.mu.Unlock()
	if !ok || !known || !s.now().Before(t.expires) {
		return fail(http.StatusUnauthorized, "INVALID_SESSION_ID", "Session expired or invalid")
	}
	return nil
}

// ExpireTokens ends every access token issued so far, as an administrator
// revoking sessions (or their timeout) would.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	clear(s.tokens)
	s.mu.Unlock()
}

// IssueRefreshToken returns a refresh token for the client, as a web-server
// flow would have given one (the client-credentials flow gives none).
func (s *Server) IssueRefreshToken(clientID string) (string, error) {
	if s.checkClient(clientID, "", false) != nil {
		return "", errors.New("salesforce fake: no such client " + clientID)
	}
	rt := "5Aep" + randomToken()
	s.mu.Lock()
	s.refresh[rt] = clientID
	s.mu.Unlock()
	return rt, nil
}

// instanceURL is the fake's own address as the client reached it.
func instanceURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// randomToken is an unguessable token body.
func randomToken() string {
	buf := make([]byte, 48)
	_, _ = rand.Read(buf) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(buf)
}
