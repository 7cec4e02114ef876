package sandbox

import (
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/syncdesk/syncdesk/sync/inbox/verify"
)

// ErrNoSuchObject is an id the provider does not hold.
var ErrNoSuchObject = errors.New("no such object")

// hookScheme is how one provider names, shapes and signs its events.
type hookScheme struct {
	idPrefix                            string // "evt_", "msg_"
	created, updated, deleted, refunded string // event types; "" sends nothing
	key                                 func(secret string) ([]byte, error)
	encode                              func(id, typ string, obj map[string]any, at time.Time) []byte
	sign                                func(h http.Header, key []byte, id string, body []byte, now time.Time)
}

// stripeScheme is the payment provider's: Stripe's event envelope and
// Stripe-Signature. Payments are never deleted at Stripe, so no event for it.
var stripeScheme = hookScheme{
	idPrefix: "evt_", created: "payment.succeeded", updated: "payment.updated", refunded: "payment.refunded",
	key: stripeKey, encode: encodeStripe, sign: signStripe,
}

// standardScheme is the CRM's: Standard Webhooks (standardwebhooks.com).
var standardScheme = hookScheme{
	idPrefix: "msg_", created: "deal.created", updated: "deal.updated", deleted: "deal.deleted",
	key: standardKey, encode: encodeStandard, sign: signStandard,
}

func stripeKey(secret string) ([]byte, error) {
	if secret == "" {
		return nil, errors.New("secret is empty")
	}
	return []byte(secret), nil
}

// encodeStripe is {"id","type","created","data":{"object"}}.
func encodeStripe(id, typ string, obj map[string]any, at time.Time) []byte {
	type data struct {
		Object map[string]any `json:"object"`
	}
	return mustJSON(struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Created int64  `json:"created"`
		Data    data   `json:"data"`
	}{id, typ, at.Unix(), data{obj}})
}

// signStripe sets Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">.
func signStripe(h http.Header, key []byte, _ string, body []byte, now time.Time) {
	t := strconv.FormatInt(now.Unix(), 10)
	h.Set("Stripe-Signature", "t="+t+",v1="+hex.EncodeToString(hmacSHA256(key, t, ".", string(body))))
}

// standardKey decodes "whsec_<base64>" as receivers do (verify.StandardKey).
func standardKey(secret string) ([]byte, error) {
	key, err := verify.StandardKey(secret)
	if err != nil {
		return nil, fmt.Errorf("secret %w", err)
	}
	return key, nil
}

// encodeStandard is {"type","timestamp","data"}.
func encodeStandard(_, typ string, obj map[string]any, at time.Time) []byte {
	return mustJSON(struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}{typ, at.UTC().Format(time.RFC3339), obj})
}

// signStandard sets webhook-id, webhook-timestamp and webhook-signature
// (verify.StandardSignature).
func signStandard(h http.Header, key []byte, id string, body []byte, now time.Time) {
	t := strconv.FormatInt(now.Unix(), 10)
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", t)
	h.Set("webhook-signature", verify.StandardSignature(key, id, t, body))
}

func hmacSHA256(key []byte, parts ...string) []byte {
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write([]byte(p))
	}
	return mac.Sum(nil)
}

// NewStandardSecret returns a fresh Standard Webhooks secret: "whsec_" and
// 32 random bytes in base64.
func NewStandardSecret() string {
	key := make([]byte, 32)
	_, _ = crand.Read(key) // never fails: crypto/rand crashes the program instead
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// emitLocked queues an event of type typ about obj, encoded now so that
// every delivery carries the same body. The caller holds p.mu, which keeps
// event ids in the order of the changes.
func (p *Provider) emitLocked(typ string, obj map[string]any) {
	s := p.hooks.sender
	if s == nil || typ == "" {
		return
	}
	p.hooks.seq++
	id := p.spec.events.idPrefix + p.hooks.run + "_" + strconv.Itoa(p.hooks.seq)
	s.enqueue(event{id: id, body: p.spec.events.encode(id, typ, obj, s.cfg.Now())})
}

// Refund marks payment id refunded and sends payment.refunded. It fails for
// an unknown id, a payment refunded already, or a provider without refunds.
func (p *Provider) Refund(id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spec.events.refunded == "" {
		return fmt.Errorf("refund %s: the %s provider has no refunds", id, p.spec.collection)
	}
	obj, ok := p.store.get(id)
	switch {
	case !ok:
		return fmt.Errorf("refund %s: %w", id, ErrNoSuchObject)
	case obj["status"] == "refunded":
		return fmt.Errorf("refund %s: already refunded", id)
	}
	obj["status"] = "refunded"
	p.emitLocked(p.spec.events.refunded, obj)
	return nil
}

// EmitContactCreated sends contact.created with contact as its data: an
// object syncdesk has never seen. Nothing is stored. contact must be
// JSON-encodable (it panics otherwise).
func (p *Provider) EmitContactCreated(contact map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emitLocked("contact.created", contact)
}

// remove is DELETE's deletion, which is announced; Delete, the tests' way
// to change things behind the caller's back, stays silent.
func (p *Provider) remove(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	obj, ok := p.store.get(id)
	if !ok || !p.store.remove(id) {
		return false
	}
	p.emitLocked(p.spec.events.deleted, obj)
	return true
}

// fillDefaults gives obj the fields of defaults it lacks, and returns it.
func fillDefaults(obj, defaults map[string]any) map[string]any {
	for k, v := range defaults {
		if _, ok := obj[k]; !ok {
			obj[k] = v
		}
	}
	return obj
}
