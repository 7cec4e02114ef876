package config

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// This file holds the settings that describe a real provider's API: how a
// record becomes a request body, where answers keep what syncdesk reads,
// how to authenticate and how fast to go (README, "Real providers").

// Body is a declarative request body: either Fields, a map from a dotted
// target path ("metadata.syncdesk_key", "properties.email") to a gojq
// expression evaluated on the record's payload, or Expr, one gojq
// expression that yields the whole body. Expressions see $key (our
// external key), $local_id, $local_type and $external_id.
type Body struct {
	Fields map[string]string
	Expr   string
}

// IsZero reports whether no body mapping was given: the record's payload
// is then sent as it is, with our key added at key_field.
func (b Body) IsZero() bool { return len(b.Fields) == 0 && b.Expr == "" }

// UnmarshalYAML reads a body given as a map of target paths to
// expressions, or as one expression. A constant in the map may be written
// as a plain YAML number or boolean; a string constant is a jq string
// literal ('"usd"').
func (b *Body) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Decode(&b.Expr)
	case yaml.MappingNode:
		return n.Decode(&b.Fields)
	}
	return fmt.Errorf("line %d: body is a map of target paths to expressions, or one expression", n.Line)
}

// Paging says how a list answer leads to the next page.
type Paging struct {
	// Style is cursor (the answer names the next cursor at Cursor; the
	// default), starting_after (the next page starts after the last item's
	// id while HasMore is true: Stripe) or next_url (the answer names the
	// next page's URL at NextURL: Salesforce's nextRecordsUrl).
	Style string `yaml:"style"`
	// Cursor is the path of the next cursor in the answer (cursor style;
	// default next_cursor). HubSpot: paging.next.after.
	Cursor string `yaml:"cursor"`
	// HasMore is the path of the "more pages" flag (starting_after style;
	// default has_more).
	HasMore string `yaml:"has_more"`
	// NextURL is the path of the next page's URL (next_url style).
	NextURL string `yaml:"next_url"`
}

// Conflict says how a provider refuses a create because an object with our
// key already exists, and where that answer names the object: the link
// adopts it instead of failing or creating again (HubSpot's unique
// property answers 409 "Existing ID: 123").
type Conflict struct {
	// Status is the HTTP status of such a refusal (e.g. 409).
	Status int `yaml:"status"`
	// IDPath is where the existing object's id sits in the answer.
	IDPath string `yaml:"id_path"`
	// IDPattern is a regular expression over the answer's body whose
	// first group is the existing object's id; used when IDPath is empty
	// or finds nothing.
	IDPattern string `yaml:"id_pattern"`
}

// Auth says how syncdesk proves who it is to the provider, on top of the
// static headers.
type Auth struct {
	// Type is "" (headers only), basic or oauth2.
	Type string `yaml:"type"`
	// Username and Password, for basic; ${VAR} is read from the environment.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// For oauth2: the token endpoint (a path is taken relative to
	// base_url), the client's credentials and, for the refresh-token
	// grant, the refresh token; without one the grant is client
	// credentials. ${VAR} is read from the environment.
	TokenURL     string   `yaml:"token_url"`
	ClientID     string   `yaml:"client_id"`
	ClientSecret string   `yaml:"client_secret"`
	RefreshToken string   `yaml:"refresh_token"`
	Scopes       []string `yaml:"scopes"`
	// Params sends the client's credentials in the token request's form
	// body instead of an Authorization: Basic header.
	Params bool `yaml:"params"`
	// Lifetime is how long a token lasts when the token endpoint does not
	// say (Salesforce sends no expires_in); 0 keeps it until a 401.
	Lifetime time.Duration `yaml:"lifetime"`
}

// RateLimit bounds how fast syncdesk calls one service, all instances
// together. The provider's own headers (Retry-After, X-RateLimit-*,
// X-HubSpot-RateLimit-*) slow it further when they say so.
type RateLimit struct {
	// PerSecond is the steady rate of requests; 0 is unlimited.
	PerSecond float64 `yaml:"per_second"`
	// Burst is how many requests may go at once after a quiet spell
	// (default: PerSecond rounded up, at least 1).
	Burst int `yaml:"burst"`
	// Concurrent bounds the requests in flight per instance; 0 is the
	// engine's own concurrency.
	Concurrent int `yaml:"concurrent"`
}
