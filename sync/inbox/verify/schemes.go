package verify

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// stripeHeader is a parsed Stripe-Signature value.
type stripeHeader struct {
	t  string    // raw, as signed
	ts time.Time // parsed t
	v1 [][]byte  // decoded v1 signatures; undecodable ones are dropped
}

// parseStripeHeader parses "t=…,v1=…,v1=…,v0=…" in any order. Unknown keys
// (v0, future schemes) are ignored, as Stripe's libraries do.
func parseStripeHeader(v string) (stripeHeader, error) {
	var sh stripeHeader
	seenT := false
	for item := range strings.SplitSeq(v, ",") {
		key, val, ok := strings.Cut(item, "=")
		if !ok {
			return sh, fmt.Errorf("%w: Stripe-Signature item without '='", ErrBadSignature)
		}
		switch key {
		case "t":
			if seenT {
				return sh, fmt.Errorf("%w: Stripe-Signature has two timestamps", ErrBadSignature)
			}
			ts, err := parseUnix(val)
			if err != nil {
				return sh, err
			}
			sh.t, sh.ts, seenT = val, ts, true
		case "v1":
			if sig, err := decodeSig("hex", val); err == nil {
				sh.v1 = append(sh.v1, sig)
			}
		}
	}
	if !seenT {
		return sh, fmt.Errorf("%w: Stripe-Signature has no timestamp", ErrBadSignature)
	}
	return sh, nil
}

func verifyStripe(cfg Config, h http.Header, body []byte, now time.Time) (Event, error) {
	v := h.Get("Stripe-Signature")
	if v == "" {
		return Event{}, fmt.Errorf("%w: no Stripe-Signature header", ErrMissingSignature)
	}
	sh, err := parseStripeHeader(v)
	if err != nil {
		return Event{}, err
	}
	// Stripe keys the MAC with the whsec_… string itself, undecoded.
	if !matchAny(cfg.Secrets, sh.v1, []byte(sh.t), dot, body) {
		return Event{}, fmt.Errorf("%w: no v1 signature matches", ErrBadSignature)
	}
	if err := checkFresh(sh.ts, now, cfg.tolerance()); err != nil {
		return Event{}, err
	}
	doc := parseJSON(body)
	return Event{ID: lookup(doc, "id"), Type: lookup(doc, "type"), Timestamp: sh.ts}, nil
}

// parseStandardSignatures returns the decoded v1 signatures of a
// space-separated webhook-signature list; other versions (v1a, …) and
// undecodable entries are skipped, as the spec asks.
func parseStandardSignatures(v string) [][]byte {
	var sigs [][]byte
	for _, item := range strings.Fields(v) {
		version, sig, ok := strings.Cut(item, ",")
		if !ok || version != "v1" {
			continue
		}
		if b, err := decodeSig("base64", sig); err == nil {
			sigs = append(sigs, b)
		}
	}
	return sigs
}

func verifyStandard(cfg Config, h http.Header, body []byte, now time.Time) (Event, error) {
	id, ts, sig := h.Get("Webhook-Id"), h.Get("Webhook-Timestamp"), h.Get("Webhook-Signature")
	switch {
	case sig == "":
		return Event{}, fmt.Errorf("%w: no webhook-signature header", ErrMissingSignature)
	case id == "": // part of the signed content, so it is needed to verify
		return Event{}, fmt.Errorf("%w: no webhook-id header", ErrMissingSignature)
	case ts == "":
		return Event{}, fmt.Errorf("%w: no webhook-timestamp header", ErrMissingSignature)
	}
	t, err := parseUnix(ts)
	if err != nil {
		return Event{}, err
	}
	keys, err := standardKeys(cfg.Secrets)
	if err != nil {
		return Event{}, err
	}
	if !matchAny(keys, parseStandardSignatures(sig), []byte(id), dot, []byte(ts), dot, body) {
		return Event{}, fmt.Errorf("%w: no v1 signature matches", ErrBadSignature)
	}
	if err := checkFresh(t, now, cfg.tolerance()); err != nil {
		return Event{}, err
	}
	return Event{ID: id, Type: lookup(parseJSON(body), "type"), Timestamp: t}, nil
}

func verifyGitHub(cfg Config, h http.Header, body []byte) (Event, error) {
	v := h.Get("X-Hub-Signature-256")
	if v == "" {
		return Event{}, fmt.Errorf("%w: no X-Hub-Signature-256 header", ErrMissingSignature)
	}
	hexSig, ok := strings.CutPrefix(v, "sha256=")
	if !ok {
		return Event{}, fmt.Errorf("%w: X-Hub-Signature-256 lacks the sha256= prefix", ErrBadSignature)
	}
	if err := checkOne(cfg.Secrets, "hex", hexSig, body); err != nil {
		return Event{}, err
	}
	// One delivery id is shared by every hook subscribed to the event, so
	// the hook id keeps two hooks' deliveries from deduplicating each other.
	id := h.Get("X-GitHub-Delivery")
	if hook := h.Get("X-GitHub-Hook-ID"); id != "" && hook != "" {
		id += ":" + hook
	}
	return Event{ID: id, Type: h.Get("X-GitHub-Event")}, nil
}

func verifyShopify(cfg Config, h http.Header, body []byte) (Event, error) {
	v := h.Get("X-Shopify-Hmac-Sha256")
	if v == "" {
		return Event{}, fmt.Errorf("%w: no X-Shopify-Hmac-Sha256 header", ErrMissingSignature)
	}
	if err := checkOne(cfg.Secrets, "base64", v, body); err != nil {
		return Event{}, err
	}
	return Event{ID: h.Get("X-Shopify-Webhook-Id"), Type: h.Get("X-Shopify-Topic")}, nil
}

// checkOne verifies a single encoded signature over the parts.
func checkOne(keys [][]byte, encoding, sig string, parts ...[]byte) error {
	b, err := decodeSig(encoding, sig)
	if err != nil {
		return err
	}
	if !matchAny(keys, [][]byte{b}, parts...) {
		return fmt.Errorf("%w: signature matches no secret", ErrBadSignature)
	}
	return nil
}

func verifyHMAC(cfg Config, h http.Header, body []byte, now time.Time) (Event, error) {
	v := h.Get(cfg.Header)
	if v == "" {
		return Event{}, fmt.Errorf("%w: no %s header", ErrMissingSignature, cfg.Header)
	}
	sig, ok := strings.CutPrefix(v, cfg.Prefix)
	if !ok {
		return Event{}, fmt.Errorf("%w: %s lacks the %q prefix", ErrBadSignature, cfg.Header, cfg.Prefix)
	}
	var ev Event
	parts := [][]byte{body}
	if cfg.TimestampHeader != "" {
		ts := h.Get(cfg.TimestampHeader)
		if ts == "" {
			return Event{}, fmt.Errorf("%w: no %s header", ErrMissingSignature, cfg.TimestampHeader)
		}
		t, err := parseUnix(ts)
		if err != nil {
			return Event{}, err
		}
		ev.Timestamp, parts = t, [][]byte{[]byte(ts), dot, body}
	}
	if err := checkOne(cfg.Secrets, cfg.Encoding, sig, parts...); err != nil {
		return Event{}, err
	}
	if cfg.TimestampHeader != "" {
		if err := checkFresh(ev.Timestamp, now, cfg.tolerance()); err != nil {
			return Event{}, err
		}
	}
	doc := parseJSON(body)
	ev.Type = lookup(doc, "type")
	if cfg.IDHeader != "" {
		ev.ID = h.Get(cfg.IDHeader)
	}
	if ev.ID == "" && cfg.IDPath != "" {
		ev.ID = lookup(doc, cfg.IDPath)
	}
	return ev, nil
}
