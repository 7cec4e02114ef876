package config

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// Auth types (see Auth.Type).
const (
	AuthHeaders = ""
	AuthBasic   = "basic"
	AuthOAuth2  = "oauth2"
)

// validate checks the auth settings of service name.
func (a Auth) validate(name string) []error {
	var errs []error
	bad := func(setting, format string, args ...any) {
		errs = append(errs, fmt.Errorf("setting services.%s.auth.%s: %s", name, setting, fmt.Sprintf(format, args...)))
	}
	// Every field that may name a variable is checked whatever the type, so
	// that a typo in a name is caught before the first call needs it.
	fields := a.fields()
	for _, f := range fields {
		if _, missing := ExpandEnv(f.value); len(missing) > 0 {
			bad(f.name, "environment variable %s is not set", strings.Join(missing, ", "))
		}
	}
	need := func(setting, value, why string) {
		if value == "" {
			bad(setting, "%s", why)
		} else if v, missing := ExpandEnv(value); v == "" && len(missing) == 0 {
			bad(setting, "is empty once its environment variables are read")
		}
	}
	switch a.Type {
	case AuthHeaders:
		for _, f := range fields {
			if f.value != "" {
				bad("type", "%s is set but type is not; set type: basic or oauth2", f.name)
				break
			}
		}
	case AuthBasic:
		need("username", a.Username, "HTTP basic needs a username")
		need("password", a.Password, "HTTP basic needs a password")
	case AuthOAuth2:
		need("token_url", a.TokenURL, "OAuth 2.0 needs the token endpoint's URL, or its path under base_url")
		need("client_id", a.ClientID, "OAuth 2.0 needs the client id the provider issued")
		if a.ClientSecret == "" && a.RefreshToken == "" {
			bad("client_secret", "OAuth 2.0 needs a client secret (client credentials grant) or a refresh_token")
		}
		// Each one given must hold something: an empty refresh token would
		// quietly turn the grant into client credentials.
		if a.ClientSecret != "" {
			need("client_secret", a.ClientSecret, "")
		}
		if a.RefreshToken != "" {
			need("refresh_token", a.RefreshToken, "")
		}
		if !tokenURLShape(a.TokenURL) {
			bad("token_url", "%q is neither an http(s) URL nor a path starting with /", a.TokenURL)
		}
	default:
		bad("type", "%q is not basic or oauth2 (leave it out to authenticate with headers only)", a.Type)
	}
	if a.Lifetime < 0 {
		bad("lifetime", "must be 0 (keep a token until the provider refuses it) or a positive duration such as 1h")
	}
	return errs
}

// authField is one setting of Auth that may name environment variables.
type authField struct{ name, value string }

func (a Auth) fields() []authField {
	return []authField{{"username", a.Username}, {"password", a.Password}, {"token_url", a.TokenURL},
		{"client_id", a.ClientID}, {"client_secret", a.ClientSecret}, {"refresh_token", a.RefreshToken}}
}

// tokenURLShape reports whether a token_url is an http(s) URL or a path;
// an empty one is reported by its own check.
func tokenURLShape(raw string) bool {
	if raw == "" {
		return true
	}
	expanded, _ := ExpandEnv(raw)
	if strings.HasPrefix(expanded, "/") {
		return true
	}
	u, err := url.Parse(expanded)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// secrets are the auth's secret values with their pieces (see
// secretPieces), and the forms they travel in: the user:password of HTTP
// basic and its base64, and the client's credentials as x/oauth2 sends
// them in a Basic header to the token endpoint (each part URL-escaped).
func (a Auth) secrets() []string {
	var out []string
	for _, v := range []string{a.Password, a.ClientSecret, a.RefreshToken} {
		if v != "" {
			out = append(out, secretPieces(v)...)
		}
	}
	user, _ := ExpandEnv(a.Username)
	password, _ := ExpandEnv(a.Password)
	if a.Type == AuthBasic && password != "" {
		pair := user + ":" + password
		out = append(out, pair, base64.StdEncoding.EncodeToString([]byte(pair)))
	}
	id, _ := ExpandEnv(a.ClientID)
	secret, _ := ExpandEnv(a.ClientSecret)
	if a.Type == AuthOAuth2 && secret != "" {
		pair := url.QueryEscape(id) + ":" + url.QueryEscape(secret)
		out = append(out, url.QueryEscape(secret), pair, base64.StdEncoding.EncodeToString([]byte(pair)))
	}
	return out
}
