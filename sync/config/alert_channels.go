package config

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/sync/inbox/verify"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Channel kinds (AlertChannel.Kind).
const (
	ChannelWebhook = "webhook"
	ChannelSlack   = "slack"
	ChannelEmail   = "email"
)

// STARTTLS modes of an e-mail channel (AlertChannel.StartTLS).
const (
	StartTLSRequired      = "required"
	StartTLSOpportunistic = "opportunistic"
	StartTLSOff           = "off"
)

// AlertChannel is one place notifications go (sync/notify): a webhook
// signed with the Standard Webhooks scheme, a Slack-compatible incoming
// webhook, or e-mail over SMTP. Defaults are read through SendTimeout,
// SMTPPort and StartTLSMode, so that a channel means the same wherever it
// is read.
type AlertChannel struct {
	// Kind is webhook, slack or email.
	Kind string `yaml:"kind"`
	// Timeout bounds one attempt to send; 10s when unsaid.
	Timeout time.Duration `yaml:"timeout"`

	// URL is where a webhook or slack channel posts. A Slack incoming
	// webhook's URL is itself the credential: give it as ${VAR}.
	URL string `yaml:"url"`
	// Secret signs a webhook channel's posts: "whsec_<base64>", as ${VAR}.
	Secret string `yaml:"secret"`
	// Headers are sent on every post of a webhook channel; ${VAR} is read
	// from the environment.
	Headers map[string]string `yaml:"headers"`

	// Host and Port are an email channel's SMTP server (port 587, or 465
	// with TLS, when unsaid).
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
	// Username and Password sign in to it (AUTH PLAIN); the password as ${VAR}.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// From and To are the mail's sender and recipients.
	From string   `yaml:"from"`
	To   []string `yaml:"to"`
	// StartTLS is required (the default: no mail without encryption),
	// opportunistic (encrypt when the server offers it) or off.
	StartTLS string `yaml:"starttls"`
	// TLS speaks TLS from the first byte (implicit TLS, usually port 465)
	// instead of STARTTLS.
	TLS bool `yaml:"tls"`
}

// DefaultChannelTimeout bounds one attempt when a channel says nothing.
const DefaultChannelTimeout = 10 * time.Second

// SendTimeout is how long one attempt to send may take.
func (ch AlertChannel) SendTimeout() time.Duration {
	if ch.Timeout == 0 {
		return DefaultChannelTimeout
	}
	return ch.Timeout
}

// SMTPPort is the SMTP server's port: 587 (submission), or 465 with TLS.
func (ch AlertChannel) SMTPPort() int {
	switch {
	case ch.Port != 0:
		return ch.Port
	case ch.TLS:
		return 465
	}
	return 587
}

// StartTLSMode is required, opportunistic or off; required when unsaid.
func (ch AlertChannel) StartTLSMode() string {
	if ch.StartTLS == "" {
		return StartTLSRequired
	}
	return ch.StartTLS
}

// Expanded returns v with ${VAR} read from the environment. Keep the result
// in memory only.
func (ch AlertChannel) Expanded(v string) string {
	out, _ := ExpandEnv(v)
	return out
}

// kindSettings are the settings each kind reads; any other one set is a
// mistake worth naming (a slack channel with a `to` was meant as email).
var kindSettings = map[string][]string{
	ChannelWebhook: {"url", "secret", "headers"},
	ChannelSlack:   {"url"},
	ChannelEmail:   {"host", "port", "username", "password", "from", "to", "starttls", "tls"},
}

// setSettings names the kind-specific settings that are set.
func (ch AlertChannel) setSettings() []string {
	set := []struct {
		name string
		on   bool
	}{{"url", ch.URL != ""}, {"secret", ch.Secret != ""}, {"headers", len(ch.Headers) > 0},
		{"host", ch.Host != ""}, {"port", ch.Port != 0}, {"username", ch.Username != ""},
		{"password", ch.Password != ""}, {"from", ch.From != ""}, {"to", len(ch.To) > 0},
		{"starttls", ch.StartTLS != ""}, {"tls", ch.TLS}}
	var out []string
	for _, s := range set {
		if s.on {
			out = append(out, s.name)
		}
	}
	return out
}

// validate checks channel name and names each bad setting.
func (ch AlertChannel) validate(name string) []error {
	var errs []error
	bad := func(setting, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting alerts.channels.%s.%s: %s", name, setting, fmt.Sprintf(format, a...)))
	}
	if !serviceName.MatchString(name) {
		errs = append(errs, fmt.Errorf("setting alerts.channels.%s: a channel name is lower-case letters, digits, - and _", name))
	}
	if t := ch.SendTimeout(); t < time.Second || t > 5*time.Minute {
		bad("timeout", "must be a duration between 1s and 5m such as 10s, got %v", ch.Timeout)
	}
	allowed, known := kindSettings[ch.Kind]
	if !known {
		bad("kind", "%q is not webhook, slack or email", ch.Kind)
		return errs
	}
	for _, s := range ch.setSettings() {
		if !slices.Contains(allowed, s) {
			bad(s, "is not a setting of %s (it takes %s)", ch.kindWords(), strings.Join(allowed, ", "))
		}
	}
	switch ch.Kind {
	case ChannelWebhook:
		ch.validateWebhook(bad)
	case ChannelSlack:
		ch.validateURL(bad)
	case ChannelEmail:
		ch.validateEmail(bad)
	}
	return errs
}

// kindWords is "a webhook channel", "an email channel", ….
func (ch AlertChannel) kindWords() string {
	if ch.Kind == ChannelEmail {
		return "an email channel"
	}
	return "a " + ch.Kind + " channel"
}

// needEnv reads a setting's ${VAR}s, naming any that is not set; it
// returns the expanded value and whether it could be read.
func needEnv(bad func(setting, format string, a ...any), setting, raw string) (string, bool) {
	v, missing := ExpandEnv(raw)
	if len(missing) > 0 {
		bad(setting, "environment variable %s is not set", strings.Join(missing, ", "))
		return "", false
	}
	return v, true
}

func (ch AlertChannel) validateURL(bad func(setting, format string, a ...any)) {
	if ch.URL == "" {
		bad("url", "%s needs the URL it posts to", ch.kindWords())
		return
	}
	raw, ok := needEnv(bad, "url", ch.URL)
	if !ok {
		return
	}
	// The URL is not quoted: a Slack webhook's URL is its credential.
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("url", "is not an http(s) URL such as https://hooks.example.com/alerts")
	}
}

func (ch AlertChannel) validateWebhook(bad func(setting, format string, a ...any)) {
	ch.validateURL(bad)
	if ch.Secret == "" {
		bad("secret", `a webhook channel signs what it sends: give the receiver's "whsec_…" secret, as ${VAR}`)
	} else if secret, ok := needEnv(bad, "secret", ch.Secret); ok {
		if _, err := verify.StandardKey(secret); err != nil {
			bad("secret", `%v (a Standard Webhooks secret, such as "whsec_" and 32 random bytes in base64)`, err)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(ch.Headers)) {
		setting := "headers." + h
		if !validHeaderName(h) {
			bad(setting, "%q is not an HTTP header name", h)
		} else if signed := strings.ToLower(h); strings.HasPrefix(signed, "webhook-") || signed == "content-type" {
			bad(setting, "is set by the channel itself (webhook-id, webhook-timestamp, webhook-signature, Content-Type)")
		}
		if v, ok := needEnv(bad, setting, ch.Headers[h]); ok && strings.ContainsAny(v, "\r\n") {
			bad(setting, "holds a line break")
		}
	}
}

func (ch AlertChannel) validateEmail(bad func(setting, format string, a ...any)) {
	if host := ch.Host; host == "" {
		bad("host", "an email channel needs its SMTP server's host name")
	} else if strings.ContainsAny(host, " \t\r\n/:@") && net.ParseIP(host) == nil {
		bad("host", "%q is not a host name such as smtp.example.com", host)
	}
	if ch.Port < 0 || ch.Port > 65535 {
		bad("port", "must be between 1 and 65535 (587 for STARTTLS, 465 with tls: true), got %d", ch.Port)
	}
	switch ch.StartTLS {
	case "", StartTLSRequired, StartTLSOpportunistic, StartTLSOff:
	default:
		bad("starttls", "%q is not required, opportunistic or off", ch.StartTLS)
	}
	if ch.TLS && ch.StartTLS != "" {
		bad("starttls", "does not apply with tls: true, which encrypts from the first byte")
	}
	user, userOK := needEnv(bad, "username", ch.Username)
	password, passOK := needEnv(bad, "password", ch.Password)
	switch {
	case userOK && passOK && (user == "") != (password == ""):
		bad("password", "username and password go together (leave both out for a server that takes mail without signing in)")
	case password != "" && !ch.TLS && ch.StartTLS == StartTLSOff:
		bad("starttls", "off would send the password unencrypted; use required, or tls: true")
	}
	if ch.From == "" {
		bad("from", "an email channel needs the sender's address, such as syncdesk@example.com")
	} else if _, err := mail.ParseAddress(ch.From); err != nil {
		bad("from", "%q is not an e-mail address", ch.From)
	}
	if len(ch.To) == 0 {
		bad("to", "an email channel needs at least one recipient")
	}
	for i, to := range ch.To {
		if _, err := mail.ParseAddress(to); err != nil {
			bad(fmt.Sprintf("to[%d]", i), "%q is not an e-mail address", to)
		}
	}
}

// validHeaderName reports whether h is an HTTP token (RFC 9110 5.1).
func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for _, c := range h {
		if c > 0x7e || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}

// secrets returns the channel's secret values, expanded, with their pieces.
func (ch AlertChannel) secrets() []string { return ch.Secrets() }

// Secrets returns the channel's secret values, expanded, with their pieces
// (see secretPieces), for the redactor to mask: a webhook's signing secret,
// the values of its headers but those excerpts show, any ${VAR} its URL
// names, and the parts of its URL that may hold a token (hookPathParts),
// which README promises no stored failure quotes; a Slack webhook's URL,
// whole and by the path that holds its token; an SMTP password, and the
// AUTH PLAIN credential it travels in.
func (ch AlertChannel) Secrets() []string {
	var out []string
	switch ch.Kind {
	case ChannelWebhook:
		out = append(out, secretPieces(ch.Secret)...)
		for name, v := range ch.Headers {
			if !redact.ShowsHeader(name) {
				out = append(out, secretPieces(v)...)
			}
		}
		out = append(out, secretPieces(ch.URL)[1:]...) // the URL itself is an address, not a secret
		out = append(out, hookPathParts(ch.Expanded(ch.URL))...)
	case ChannelSlack:
		out = append(out, secretPieces(ch.URL)...)
		out = append(out, urlSecretParts(ch.Expanded(ch.URL))...)
	case ChannelEmail:
		if ch.Password == "" {
			break
		}
		out = append(out, secretPieces(ch.Password)...)
		plain := "\x00" + ch.Expanded(ch.Username) + "\x00" + ch.Expanded(ch.Password)
		out = append(out, base64.StdEncoding.EncodeToString([]byte(plain)))
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// urlSecretParts are the parts of a credential URL that a receiver may
// quote alone: its path (Slack's /services/T…/B…/token) and query, and
// the path's last segment when it is long enough to be a token: a short
// one ("alerts") would be masked in every log line that says the word.
func urlSecretParts(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	out := []string{u.RawQuery}
	if p := strings.Trim(u.EscapedPath(), "/"); p != "" {
		out = append(out, u.EscapedPath())
		if last := p[strings.LastIndex(p, "/")+1:]; len(last) >= minTokenSegment {
			out = append(out, last)
		}
	}
	return out
}

// hookPathParts are the parts of a webhook channel's URL that may carry
// its token (Zapier's /hooks/catch/123456/abcdef/, a query's key): the
// query, and the path when it is long enough to hold one. A short path
// (/alerts) is a route, and masking it would mask syncdesk's own log lines.
func hookPathParts(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	out := []string{u.RawQuery}
	if len(strings.Trim(u.EscapedPath(), "/")) >= minTokenSegment {
		out = append(out, u.EscapedPath())
	}
	return out
}

// minTokenSegment is the shortest last path segment taken for a token;
// Slack's are 24 characters.
const minTokenSegment = 16
