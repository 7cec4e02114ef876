package config

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBadAuthNamesTheSetting(t *testing.T) {
	t.Setenv("SYNCDESK_TEST_EMPTY", "")
	for _, tc := range []struct{ auth, want string }{
		{"{type: digest}", `setting services.crm.auth.type: "digest" is not basic or oauth2`},
		{"{username: ana}", "setting services.crm.auth.type: username is set but type is not"},
		{"{type: basic, password: pw}", "setting services.crm.auth.username: HTTP basic needs a username"},
		{"{type: basic, username: ana}", "setting services.crm.auth.password: HTTP basic needs a password"},
		{"{type: basic, username: ana, password: '${SYNCDESK_NO_SUCH_VAR}'}",
			"setting services.crm.auth.password: environment variable SYNCDESK_NO_SUCH_VAR is not set"},
		{"{type: basic, username: ana, password: '${SYNCDESK_TEST_EMPTY}'}", "setting services.crm.auth.password: is empty"},
		{"{type: oauth2, client_id: c, client_secret: s}", "setting services.crm.auth.token_url: OAuth 2.0 needs the token endpoint"},
		{"{type: oauth2, token_url: /token, client_secret: s}", "setting services.crm.auth.client_id: OAuth 2.0 needs the client id"},
		{"{type: oauth2, token_url: /token, client_id: c}", "setting services.crm.auth.client_secret: OAuth 2.0 needs a client secret"},
		{"{type: oauth2, token_url: 'ftp://x/token', client_id: c, client_secret: s}",
			`setting services.crm.auth.token_url: "ftp://x/token" is neither an http(s) URL nor a path`},
		{"{type: oauth2, token_url: /token, client_id: c, client_secret: '${SYNCDESK_NO_SUCH_VAR}'}",
			"setting services.crm.auth.client_secret: environment variable SYNCDESK_NO_SUCH_VAR is not set"},
		{"{type: oauth2, token_url: /token, client_id: c, refresh_token: '${SYNCDESK_NO_SUCH_VAR}'}",
			"setting services.crm.auth.refresh_token: environment variable SYNCDESK_NO_SUCH_VAR is not set"},
		{"{type: oauth2, token_url: /token, client_id: c, client_secret: s, lifetime: -1m}", "setting services.crm.auth.lifetime: must be 0"},
		// Set but empty: an empty refresh token would turn the grant into
		// client credentials with an empty secret, refused at every send.
		{"{type: oauth2, token_url: /token, client_id: c, refresh_token: '${SYNCDESK_TEST_EMPTY}'}",
			"setting services.crm.auth.refresh_token: is empty once its environment variables are read"},
		{"{type: oauth2, token_url: /token, client_id: c, client_secret: '${SYNCDESK_TEST_EMPTY}'}",
			"setting services.crm.auth.client_secret: is empty once its environment variables are read"},
	} {
		_, err := Load(writeFile(t, svc("auth: "+tc.auth)), Overrides{})
		require.Error(t, err, tc.auth)
		require.Contains(t, err.Error(), tc.want, tc.auth)
	}
}

func TestGoodAuthLoads(t *testing.T) {
	t.Setenv("SYNCDESK_TEST_SECRET", "s3cret")
	for _, auth := range []string{
		"{type: basic, username: ana, password: '${SYNCDESK_TEST_SECRET}'}",
		"{type: oauth2, token_url: /services/oauth2/token, client_id: c, client_secret: '${SYNCDESK_TEST_SECRET}', lifetime: 1h}",
		"{type: oauth2, token_url: 'https://login.example.com/token', client_id: c, refresh_token: '${SYNCDESK_TEST_SECRET}'}",
		"{type: oauth2, token_url: /token, client_id: c, client_secret: s, params: true, scopes: [api, refresh_token]}",
	} {
		_, err := Load(writeFile(t, svc("auth: "+auth)), Overrides{})
		require.NoError(t, err, auth)
	}
	cfg, err := Load(writeFile(t, svc("auth: {type: oauth2, token_url: /t, client_id: c, client_secret: s, lifetime: 90m}")), Overrides{})
	require.NoError(t, err)
	require.Equal(t, 90*time.Minute, cfg.Services["crm"].Auth.Lifetime)

	cfg, err = Load(writeFile(t, svc("auth: {type: basic, username: ana, password: '${SYNCDESK_TEST_SECRET}'}")), Overrides{})
	require.NoError(t, err)
	require.Equal(t, "${SYNCDESK_TEST_SECRET}", cfg.Services["crm"].Auth.Password, "the secret is expanded only in memory, by the connector")
}

func TestSecretsHoldTheAuthCredentials(t *testing.T) {
	t.Setenv("SYNCDESK_TEST_PW", "pw-4f9a2c")
	t.Setenv("SYNCDESK_TEST_CS", "cs+8d/7e")
	t.Setenv("SYNCDESK_TEST_RT", "rt-5b6c7d")
	basic := Service{Auth: Auth{Type: AuthBasic, Username: "ana", Password: "${SYNCDESK_TEST_PW}"}}
	require.Subset(t, basic.Secrets(), []string{"pw-4f9a2c", "ana:pw-4f9a2c",
		base64.StdEncoding.EncodeToString([]byte("ana:pw-4f9a2c"))})

	oauth := Service{Auth: Auth{Type: AuthOAuth2, ClientID: "app 1", ClientSecret: "${SYNCDESK_TEST_CS}", RefreshToken: "${SYNCDESK_TEST_RT}"}}
	got := oauth.Secrets()
	require.Subset(t, got, []string{"cs+8d/7e", "rt-5b6c7d", "cs%2B8d%2F7e",
		base64.StdEncoding.EncodeToString([]byte("app+1:cs%2B8d%2F7e"))}, "the secret, the refresh token, and the Basic header x/oauth2 sends")
	require.NotContains(t, got, "app 1", "a client id is no secret")
	require.NotContains(t, got, "ana", "a user name is no secret")
}
