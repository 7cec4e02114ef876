package config

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// channel is a configuration with one alert channel, ops, given inline.
func channel(body string) string {
	return "alerts:\n  channels:\n    ops: " + body + "\n"
}

const (
	goodWebhook = `{kind: webhook, url: "https://hooks.example.com/syncdesk", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`
	goodSlack   = `{kind: slack, url: "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"}`
	goodEmail   = `{kind: email, host: smtp.example.com, username: desk, password: "${SMTP_PASSWORD}", from: "syncdesk@example.com", to: [ops@example.com]}`
)

func TestBadAlertChannelsNameTheSetting(t *testing.T) {
	t.Setenv("SMTP_PASSWORD", "s3cret-smtp-password")
	for _, tc := range []struct{ yaml, want string }{
		{`{url: "https://x.example.com"}`, `setting alerts.channels.ops.kind: "" is not webhook, slack or email`},
		{`{kind: sms}`, `setting alerts.channels.ops.kind: "sms" is not webhook, slack or email`},
		{`{kind: webhook, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, "setting alerts.channels.ops.url: a webhook channel needs the URL it posts to"},
		{`{kind: webhook, url: "ftp://x.example.com", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, "setting alerts.channels.ops.url: is not an http(s) URL"},
		{`{kind: webhook, url: "https://x.example.com"}`, "setting alerts.channels.ops.secret: a webhook channel signs what it sends"},
		{`{kind: webhook, url: "https://x.example.com", secret: "whsec_not base64!"}`, "setting alerts.channels.ops.secret: is not whsec_ followed by base64"},
		{`{kind: webhook, url: "https://x.example.com", secret: "whsec_"}`, "setting alerts.channels.ops.secret: is not whsec_ followed by base64"},
		{`{kind: webhook, url: "https://x.example.com", secret: "${NO_SUCH_SECRET_VAR}"}`, "setting alerts.channels.ops.secret: environment variable NO_SUCH_SECRET_VAR is not set"},
		{`{kind: webhook, url: "https://x.example.com", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", headers: {webhook-signature: x}}`, "setting alerts.channels.ops.headers.webhook-signature: is set by the channel itself"},
		{`{kind: webhook, url: "https://x.example.com", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", headers: {"Bad Header": x}}`, `setting alerts.channels.ops.headers.Bad Header: "Bad Header" is not an HTTP header name`},
		{`{kind: webhook, url: "https://x.example.com", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", headers: {X-Token: "${NO_SUCH_TOKEN_VAR}"}}`, "setting alerts.channels.ops.headers.X-Token: environment variable NO_SUCH_TOKEN_VAR is not set"},
		{`{kind: webhook, url: "https://x.example.com", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", to: [a@example.com]}`, "setting alerts.channels.ops.to: is not a setting of a webhook channel (it takes url, secret, headers)"},
		{`{kind: slack}`, "setting alerts.channels.ops.url: a slack channel needs the URL it posts to"},
		{`{kind: slack, url: "${NO_SUCH_SLACK_VAR}"}`, "setting alerts.channels.ops.url: environment variable NO_SUCH_SLACK_VAR is not set"},
		{`{kind: slack, url: "hooks.slack.com/services/T/B/X"}`, "setting alerts.channels.ops.url: is not an http(s) URL"},
		{`{kind: slack, url: "https://hooks.slack.com/services/T/B/X", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, "setting alerts.channels.ops.secret: is not a setting of a slack channel (it takes url)"},
		{`{kind: slack, url: "https://hooks.slack.com/services/T/B/X", timeout: 10ms}`, "setting alerts.channels.ops.timeout: must be a duration between 1s and 5m such as 10s, got 10ms"},
		{`{kind: slack, url: "https://hooks.slack.com/services/T/B/X", timeout: 1h}`, "setting alerts.channels.ops.timeout: must be a duration between 1s and 5m such as 10s, got 1h0m0s"},
		{`{kind: slack, url: "https://hooks.slack.com/services/T/B/X", timeout: -1s}`, "setting alerts.channels.ops.timeout: must be a duration between 1s and 5m"},
		{`{kind: email, from: "syncdesk@example.com", to: [ops@example.com]}`, "setting alerts.channels.ops.host: an email channel needs its SMTP server's host name"},
		{`{kind: email, host: "smtp example.com", from: "syncdesk@example.com", to: [ops@example.com]}`, `setting alerts.channels.ops.host: "smtp example.com" is not a host name`},
		{`{kind: email, host: smtp.example.com, port: 70000, from: "syncdesk@example.com", to: [ops@example.com]}`, "setting alerts.channels.ops.port: must be between 1 and 65535"},
		{`{kind: email, host: smtp.example.com, to: [ops@example.com]}`, "setting alerts.channels.ops.from: an email channel needs the sender's address"},
		{`{kind: email, host: smtp.example.com, from: "not an address", to: [ops@example.com]}`, `setting alerts.channels.ops.from: "not an address" is not an e-mail address`},
		{`{kind: email, host: smtp.example.com, from: "syncdesk@example.com"}`, "setting alerts.channels.ops.to: an email channel needs at least one recipient"},
		{`{kind: email, host: smtp.example.com, from: "syncdesk@example.com", to: [ops@example.com, "ops at example"]}`, `setting alerts.channels.ops.to[1]: "ops at example" is not an e-mail address`},
		{`{kind: email, host: smtp.example.com, from: "syncdesk@example.com", to: [ops@example.com], starttls: sometimes}`, `setting alerts.channels.ops.starttls: "sometimes" is not required, opportunistic or off`},
		{`{kind: email, host: smtp.example.com, from: "syncdesk@example.com", to: [ops@example.com], tls: true, starttls: required}`, "setting alerts.channels.ops.starttls: does not apply with tls: true"},
		{`{kind: email, host: smtp.example.com, username: desk, from: "syncdesk@example.com", to: [ops@example.com]}`, "setting alerts.channels.ops.password: username and password go together"},
		{`{kind: email, host: smtp.example.com, username: desk, password: "${SMTP_PASSWORD}", starttls: "off", from: "syncdesk@example.com", to: [ops@example.com]}`, "setting alerts.channels.ops.starttls: off would send the password unencrypted"},
		{`{kind: email, host: smtp.example.com, username: desk, password: "${NO_SUCH_SMTP_VAR}", from: "syncdesk@example.com", to: [ops@example.com]}`, "setting alerts.channels.ops.password: environment variable NO_SUCH_SMTP_VAR is not set"},
		{`{kind: email, host: smtp.example.com, url: "https://x.example.com", from: "syncdesk@example.com", to: [ops@example.com]}`, "setting alerts.channels.ops.url: is not a setting of an email channel"},
		{`{kind: email, host: smtp.example.com, from: "syncdesk@example.com", to: [ops@example.com], cc: [x@example.com]}`, ".cc: there is no such setting"},
	} {
		_, err := Load(writeFile(t, channel(tc.yaml)), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
		require.NotContains(t, err.Error(), "not base64!", "a secret is not quoted back")
		require.NotContains(t, err.Error(), "s3cret-smtp-password")
	}
}

func TestABadChannelNameIsNamed(t *testing.T) {
	_, err := Load(writeFile(t, "alerts:\n  channels:\n    Ops!: "+goodSlack+"\n"), Overrides{})
	require.ErrorContains(t, err, "setting alerts.channels.Ops!: a channel name is lower-case letters")
}

// Every mistake in the channels is named at one start, not one per try.
func TestEveryBadChannelIsNamedAtOnce(t *testing.T) {
	_, err := Load(writeFile(t, `alerts:
  channels:
    hook: {kind: webhook, url: "https://x.example.com"}
    chat: {kind: slack}
`), Overrides{})
	require.ErrorContains(t, err, "setting alerts.channels.hook.secret:")
	require.ErrorContains(t, err, "setting alerts.channels.chat.url:")
}

func TestGoodAlertChannelsLoadWithTheirDefaults(t *testing.T) {
	t.Setenv("SMTP_PASSWORD", "s3cret-smtp-password")
	cfg, err := Load(writeFile(t, `alerts:
  channels:
    hook: `+goodWebhook+`
    chat: `+goodSlack+`
    mail: `+goodEmail+`
    mail465: {kind: email, host: smtp.example.com, tls: true, from: "Syncdesk <syncdesk@example.com>", to: [a@example.com, "Bo <b@example.com>"], timeout: 30s}
    relay: {kind: email, host: 127.0.0.1, port: 25, starttls: "off", from: syncdesk@example.com, to: [a@example.com]}
`), Overrides{})
	require.NoError(t, err)
	require.Equal(t, []string{"chat", "hook", "mail", "mail465", "relay"}, cfg.Alerts.ChannelNames())
	ch := cfg.Alerts.Channels
	require.Equal(t, 10*time.Second, ch["hook"].SendTimeout(), "the default timeout")
	require.Equal(t, 30*time.Second, ch["mail465"].SendTimeout())
	require.Equal(t, 587, ch["mail"].SMTPPort(), "submission with STARTTLS by default")
	require.Equal(t, 465, ch["mail465"].SMTPPort(), "implicit TLS's port")
	require.Equal(t, 25, ch["relay"].SMTPPort())
	require.Equal(t, StartTLSRequired, ch["mail"].StartTLSMode(), "no mail in plain text unless asked")
	require.Equal(t, StartTLSOff, ch["relay"].StartTLSMode())
}

func TestSecretsHoldEveryChannelsCredentials(t *testing.T) {
	t.Setenv("SMTP_PASSWORD", "s3cret-smtp-password")
	t.Setenv("HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	t.Setenv("HOOK_TOKEN", "hook-bearer-token-123")
	t.Setenv("SLACK_URL", "https://hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx")
	cfg, err := Load(writeFile(t, `alerts:
  channels:
    hook: {kind: webhook, url: "https://hooks.example.com/alerts", secret: "${HOOK_SECRET}", headers: {Authorization: "Bearer ${HOOK_TOKEN}", Accept: application/json}}
    chat: {kind: slack, url: "${SLACK_URL}"}
    mail: `+goodEmail+`
`), Overrides{})
	require.NoError(t, err)
	secrets := cfg.Secrets()
	for _, want := range []string{
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", // the key alone too
		"Bearer hook-bearer-token-123", "hook-bearer-token-123",
		"https://hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx",
		"/services/T0001/B0001/abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx",
		"s3cret-smtp-password", base64.StdEncoding.EncodeToString([]byte("\x00desk\x00s3cret-smtp-password")),
	} {
		require.Contains(t, secrets, want)
	}
	for _, s := range secrets {
		require.NotEqual(t, "application/json", s, "a header excerpts show is no secret")
		require.False(t, strings.Contains(s, "hooks.example.com"), "a webhook's address is no secret: %q", s)
		require.False(t, strings.Contains(s, "/alerts"), "nor a short path, a route: %q", s)
		require.NotEmpty(t, s)
	}
}

// README's example channels load as they stand, one of each kind.
func TestREADMEAlertChannelsLoad(t *testing.T) {
	body, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(body), "### Alert channels\n")
	require.True(t, ok)
	section, _, _ = strings.Cut(section, "\n#")
	_, block, ok := strings.Cut(section, "```yaml\n")
	require.True(t, ok)
	block, _, _ = strings.Cut(block, "```")
	for _, v := range []string{"OPS_SLACK_WEBHOOK_URL", "SMTP_PASSWORD"} {
		t.Setenv(v, "https://hooks.slack.com/services/T/B/for-the-test")
	}
	t.Setenv("OPS_HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	cfg, err := Load(writeFile(t, block), Overrides{})
	require.NoError(t, err, block)
	kinds := map[string]bool{}
	for _, ch := range cfg.Alerts.Channels {
		kinds[ch.Kind] = true
	}
	require.Equal(t, map[string]bool{"webhook": true, "slack": true, "email": true}, kinds)
}

// A webhook URL that carries its token in its path or query (Zapier's
// /hooks/catch/ACCOUNT/HOOK/) has those parts among the secrets, so that
// a receiver quoting them back has them masked in the stored failure.
func TestAWebhookURLsTokenPathIsASecret(t *testing.T) {
	t.Setenv("HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	cfg, err := Load(writeFile(t, `alerts:
  channels:
    zap: {kind: webhook, url: "https://hooks.zapier.com/hooks/catch/123456/abcdef/", secret: "${HOOK_SECRET}"}
    keyed: {kind: webhook, url: "https://alerts.example.com/in?key=k3y-0f-the-hook", secret: "${HOOK_SECRET}"}
`), Overrides{})
	require.NoError(t, err)
	secrets := cfg.Secrets()
	require.Contains(t, secrets, "/hooks/catch/123456/abcdef/")
	require.Contains(t, secrets, "key=k3y-0f-the-hook")
	for _, s := range secrets {
		require.False(t, strings.Contains(s, "hooks.zapier.com") || strings.Contains(s, "alerts.example.com"), "the host is an address: %q", s)
	}
}
