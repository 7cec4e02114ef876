package web

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox/verify"
)

// Every scheme the verifier knows is named in words on the services page,
// with the header it reads, never as its bare config value.
func TestEverySchemeIsSaidInWords(t *testing.T) {
	for _, s := range []verify.Scheme{verify.Stripe, verify.Standard, verify.GitHub, verify.Shopify, verify.HubSpot, verify.HMAC} {
		words := schemeWords(config.Webhook{Scheme: string(s), Header: "X-Sig"})
		assert.NotEqual(t, string(s), words)
		assert.Contains(t, words, "signatures (", s)
	}
}
