// Package verify checks webhook signatures exactly as each provider documents
// them and extracts the event id that deduplicates deliveries.
//
// Everything works on the raw body bytes as received: a body decoded and
// re-encoded would not match the provider's signature.
package verify

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Scheme names a provider's signing scheme.
type Scheme string

// The supported schemes.
const (
	// Stripe is the Stripe-Signature header: t=…,v1=… over t + "." + body.
	Stripe Scheme = "stripe"
	// Standard is the Standard Webhooks spec (Svix and others).
	Standard Scheme = "standard"
	// GitHub is X-Hub-Signature-256: sha256=<hex> over the body.
	GitHub Scheme = "github"
	// Shopify is X-Shopify-Hmac-Sha256: base64 over the body.
	Shopify Scheme = "shopify"
	// HubSpot is X-HubSpot-Signature-v3: base64 over method + URL + body + timestamp.
	HubSpot Scheme = "hubspot"
	// HMAC is a generic HMAC-SHA256 scheme described by Config's fields.
	HMAC Scheme = "hmac"
)

// DefaultTolerance is how far a signed timestamp may be from now, either way,
// when Config.Tolerance is zero; both Stripe and Standard Webhooks use it.
const DefaultTolerance = 300 * time.Second

// Sentinel errors; Verify wraps them with a short reason in words.
var (
	// ErrMissingSignature: a header needed to verify the delivery is absent.
	ErrMissingSignature = errors.New("missing webhook signature")
	// ErrBadSignature: the signature is malformed or matches no secret.
	ErrBadSignature = errors.New("bad webhook signature")
	// ErrStaleTimestamp: the signed timestamp is too old or too far ahead.
	ErrStaleTimestamp = errors.New("webhook timestamp outside tolerance")
	// ErrNoEventID: the delivery is authentic but carries no event id.
	ErrNoEventID = errors.New("webhook has no event id")
	// ErrBadConfig: the Config cannot verify anything (a server fault, not the sender's).
	ErrBadConfig = errors.New("bad webhook verifier config")
)

// Config says how one service signs its webhooks.
type Config struct {
	// Scheme selects the provider's algorithm.
	Scheme Scheme
	// Secrets are the raw configured secrets; any one verifies, so a
	// rotation lists the new and the old. For Standard, the "whsec_<base64>"
	// string as configured: Verify decodes it.
	Secrets [][]byte
	// Tolerance bounds the signed timestamp's distance from now, past and
	// future; zero means DefaultTolerance.
	Tolerance time.Duration

	// Header is the signature header's name (HMAC only).
	Header string
	// Encoding of the signature: "hex" or "base64" (HMAC only).
	Encoding string
	// Prefix, when set, must precede the signature value, e.g. "sha256=" (HMAC only).
	Prefix string
	// TimestampHeader, when set, holds unix seconds; the signed message is
	// then timestamp + "." + body and Tolerance applies (HMAC only).
	TimestampHeader string
	// IDHeader names the header holding the event id (HMAC only).
	IDHeader string
	// IDPath is a dotted JSON path to the event id in the body, used when
	// IDHeader is empty or absent from the request (HMAC only).
	IDPath string
}

// Event is what a verified delivery says about itself.
type Event struct {
	// ID deduplicates deliveries; never empty when Verify succeeds.
	ID string
	// Type is the provider's event type, empty if it sends none.
	Type string
	// Timestamp is the signed timestamp, zero for schemes without one.
	Timestamp time.Time
}

// Request is what a scheme may sign besides the headers and the body; only
// HubSpot signs it.
type Request struct {
	// Method is the HTTP method as received, e.g. POST.
	Method string
	// URL is the full URL the provider called: scheme, host, path and query,
	// as the provider sent them (behind a proxy, the public one).
	URL string
}

// Verify checks one delivery's signature against cfg and returns its event.
// It knows no method or URL, so HubSpot deliveries need VerifyRequest.
func Verify(cfg Config, h http.Header, body []byte, now time.Time) (Event, error) {
	return VerifyRequest(cfg, Request{}, h, body, now)
}

// VerifyRequest is Verify for schemes that also sign the request's method and URL.
func VerifyRequest(cfg Config, req Request, h http.Header, body []byte, now time.Time) (Event, error) {
	if err := cfg.Validate(); err != nil {
		return Event{}, err
	}
	ev, err := verifyScheme(cfg, req, h, body, now)
	// HubSpot's ids are per event, inside the body's list: the inbox reads them.
	if err == nil && ev.ID == "" && cfg.Scheme != HubSpot {
		err = fmt.Errorf("%w: %s", ErrNoEventID, idSource(cfg))
	}
	if err != nil {
		return Event{}, fmt.Errorf("%s webhook: %w", cfg.Scheme, err)
	}
	return ev, nil
}

func verifyScheme(cfg Config, req Request, h http.Header, body []byte, now time.Time) (Event, error) {
	switch cfg.Scheme {
	case Stripe:
		return verifyStripe(cfg, h, body, now)
	case Standard:
		return verifyStandard(cfg, h, body, now)
	case GitHub:
		return verifyGitHub(cfg, h, body)
	case Shopify:
		return verifyShopify(cfg, h, body)
	case HubSpot:
		return verifyHubSpot(cfg, req, h, body, now)
	default:
		return verifyHMAC(cfg, h, body, now)
	}
}

// idSource names where the event id should have been, for error messages.
func idSource(cfg Config) string {
	switch cfg.Scheme {
	case Stripe:
		return `no "id" in the body`
	case GitHub:
		return "no X-GitHub-Delivery header"
	case Shopify:
		return "no X-Shopify-Webhook-Id header"
	case HubSpot:
		return `not a list of one event with an "eventId"`
	}
	var where []string
	if cfg.IDHeader != "" {
		where = append(where, cfg.IDHeader+" header")
	}
	if cfg.IDPath != "" {
		where = append(where, cfg.IDPath+" in the body")
	}
	return "no " + strings.Join(where, " and no ")
}

// Validate reports whether cfg can verify anything, so a bad config is
// caught at start instead of refusing every delivery.
func (c Config) Validate() error {
	if len(c.Secrets) == 0 {
		return fmt.Errorf("%w: no secret", ErrBadConfig)
	}
	for i, s := range c.Secrets {
		// An empty HMAC key is public: anyone could sign.
		if len(s) == 0 {
			return fmt.Errorf("%w: secret %d is empty", ErrBadConfig, i+1)
		}
	}
	if c.Tolerance < 0 {
		return fmt.Errorf("%w: negative tolerance", ErrBadConfig)
	}
	switch c.Scheme {
	case Stripe, GitHub, Shopify, HubSpot:
		return nil
	case Standard:
		_, err := standardKeys(c.Secrets)
		return err
	case HMAC:
		return c.validateHMAC()
	}
	return fmt.Errorf("%w: unknown scheme %q", ErrBadConfig, c.Scheme)
}

func (c Config) validateHMAC() error {
	switch {
	case c.Header == "":
		return fmt.Errorf("%w: no signature header", ErrBadConfig)
	case c.Encoding != "hex" && c.Encoding != "base64":
		return fmt.Errorf("%w: encoding %q is not hex or base64", ErrBadConfig, c.Encoding)
	case c.IDHeader == "" && c.IDPath == "":
		return fmt.Errorf("%w: no id header or id path", ErrBadConfig)
	case c.IDPath != "" && !validPath(c.IDPath):
		return fmt.Errorf("%w: id path %q has an empty segment", ErrBadConfig, c.IDPath)
	}
	return nil
}

func (c Config) tolerance() time.Duration {
	if c.Tolerance == 0 {
		return DefaultTolerance
	}
	return c.Tolerance
}

// standardKeys turns "whsec_<base64>" secrets into HMAC keys (see
// StandardKey); the error names the secret by its place in the list.
func standardKeys(secrets [][]byte) ([][]byte, error) {
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		key, err := StandardKey(string(s))
		if err != nil {
			return nil, fmt.Errorf("%w: secret %d %v", ErrBadConfig, i+1, err)
		}
		keys[i] = key
	}
	return keys, nil
}

// StandardKey turns one Standard Webhooks secret, "whsec_<base64>", into
// its HMAC key, as the Standard Webhooks libraries do: a secret without the
// prefix is all base64. Signing (sync/notify) and verifying decode it here
// alike. The error quotes nothing of the secret.
func StandardKey(secret string) ([]byte, error) {
	enc, _ := strings.CutPrefix(secret, "whsec_")
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(key) == 0 {
		// The decoder's message is left out: it quotes input positions.
		return nil, errors.New("is not whsec_ followed by base64")
	}
	return key, nil
}
