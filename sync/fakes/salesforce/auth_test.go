package salesforce

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

func TestTokenAnswerHasSalesforcesFieldsAndNoExpiry(t *testing.T) {
	b := setup(t, nil, nil)
	a := b.postForm(t, url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {clientSecret}}, "", "")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)

	var raw map[string]any
	a.json(t, &raw)
	require.NotContains(t, raw, "expires_in", "Salesforce sends no expires_in")
	require.NotContains(t, raw, "refresh_token", "the client credentials flow issues no refresh token")
	var tok tokenAnswer
	a.json(t, &tok)
	require.Equal(t, "Bearer", tok.TokenType)
	require.Equal(t, b.srv.URL, tok.InstanceURL, "instance_url is where the API calls go")
	require.True(t, strings.HasPrefix(tok.ID, b.srv.URL+"/id/00D"), "id is the identity URL: %s", tok.ID)
	require.Equal(t, strconv.FormatInt(b.clock.Now().UnixMilli(), 10), tok.IssuedAt, "issued_at is milliseconds since the epoch")

	mac := hmac.New(sha256.New, []byte(clientSecret))
	mac.Write([]byte(tok.ID + tok.IssuedAt))
	require.Equal(t, base64.StdEncoding.EncodeToString(mac.Sum(nil)), tok.Signature, "signature is HMAC-SHA256(id+issued_at)")
}

func TestTokenByBasicHeaderAndByTheOAuth2Library(t *testing.T) {
	b := setup(t, nil, nil)
	a := b.postForm(t, url.Values{"grant_type": {"client_credentials"}}, clientID, clientSecret)
	require.Equal(t, http.StatusOK, a.status, "credentials in a Basic header: %s", a.body)

	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		cfg := clientcredentials.Config{ClientID: clientID, ClientSecret: clientSecret,
			TokenURL: b.srv.URL + "/services/oauth2/token", AuthStyle: style}
		res, err := cfg.Client(context.Background()).Get(b.srv.URL + v60 + "/query?q=SELECT+Id+FROM+Account")
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, "golang.org/x/oauth2 (style %d) gets a token the API takes", style)
	}
	require.Equal(t, 3, b.fake.TokenRequests())
}

func TestTokenRefusals(t *testing.T) {
	b := setup(t, nil, nil)
	for _, tc := range []struct {
		name        string
		form        url.Values
		code, descr string
	}{
		{"wrong secret", url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {"nope"}},
			"invalid_client", "invalid client credentials"},
		{"no secret", url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}},
			"invalid_client", "invalid client credentials"},
		{"unknown client", url.Values{"grant_type": {"client_credentials"}, "client_id": {"who"}, "client_secret": {clientSecret}},
			"invalid_client_id", "client identifier invalid"},
		{"unknown grant", url.Values{"grant_type": {"password"}, "client_id": {clientID}, "client_secret": {clientSecret}},
			"unsupported_grant_type", "grant type not supported"},
		{"refresh token never issued", url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {"5Aep-made-up"}},
			"invalid_grant", "expired access/refresh token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := b.postForm(t, tc.form, "", "")
			require.Equal(t, http.StatusBadRequest, a.status)
			var e oauthError
			a.json(t, &e)
			require.Equal(t, oauthError{tc.code, tc.descr}, e)
		})
	}
}

func TestExpiredTokenIsRefusedAndANewOneWorks(t *testing.T) {
	b := setup(t, func(o *Options) { o.TokenLifetime = 30 * time.Minute }, nil)
	const path = v60 + "/sobjects/Account/Key__c/k1"
	tok := b.token(t)
	require.Equal(t, http.StatusCreated, b.send(t, http.MethodPatch, path, tok, `{"Name":"Acme"}`).status)

	b.clock.Advance(30 * time.Minute)
	a := b.send(t, http.MethodPatch, path, tok, `{"Name":"Acme 2"}`)
	require.Equal(t, http.StatusUnauthorized, a.status, "a token past its lifetime is refused")
	require.JSONEq(t, `[{"message":"Session expired or invalid","errorCode":"INVALID_SESSION_ID"}]`, string(a.body))
	require.Equal(t, "Acme", b.fake.Records("Account")[0]["Name"], "a refused request changes nothing")

	tok2 := b.token(t)
	require.Equal(t, http.StatusOK, b.send(t, http.MethodPatch, path, tok2, `{"Name":"Acme 2"}`).status, "a new token works")

	b.fake.ExpireTokens()
	require.Equal(t, http.StatusUnauthorized, b.send(t, http.MethodGet, path, tok2, "").status, "ExpireTokens ends it at once")
	require.Equal(t, http.StatusOK, b.send(t, http.MethodGet, path, b.token(t), "").status)
	require.Equal(t, 3, b.fake.TokenRequests())
}

func TestMissingOrUnknownTokenIsRefused(t *testing.T) {
	b := setup(t, nil, nil)
	for _, tok := range []string{"", "00D!forged"} {
		a := b.send(t, http.MethodGet, v60+"/query?q=SELECT+Id+FROM+Account", tok, "")
		require.Equal(t, http.StatusUnauthorized, a.status)
		require.Equal(t, "INVALID_SESSION_ID", errorsOf(t, a)[0].ErrorCode)
	}
}

func TestRefreshTokenGrant(t *testing.T) {
	b := setup(t, func(o *Options) {
		o.Clients = append(o.Clients, Client{ID: "other-app", Secret: "other"})
	}, nil)
	rt, err := b.fake.IssueRefreshToken(clientID)
	require.NoError(t, err)

	a := b.postForm(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {rt}}, "", "")
	require.Equal(t, http.StatusOK, a.status, "client_secret is optional with a refresh token: %s", a.body)
	var tok tokenAnswer
	a.json(t, &tok)
	require.Equal(t, http.StatusOK, b.send(t, http.MethodGet, v60+"/query?q=SELECT+Id+FROM+Account", tok.AccessToken, "").status)
	mac := hmac.New(sha256.New, []byte(clientSecret))
	mac.Write([]byte(tok.ID + tok.IssuedAt))
	require.Equal(t, base64.StdEncoding.EncodeToString(mac.Sum(nil)), tok.Signature, "signed with the app's secret, sent or not")

	a = b.postForm(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "client_secret": {"wrong"}, "refresh_token": {rt}}, "", "")
	require.Equal(t, http.StatusBadRequest, a.status, "a secret, when sent, must be right")
	a = b.postForm(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {"other-app"}, "refresh_token": {rt}}, "", "")
	require.Equal(t, http.StatusBadRequest, a.status, "a refresh token works only for the app it was issued to")

	_, err = b.fake.IssueRefreshToken("nobody")
	require.Error(t, err)
}
