package config

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecretsHoldEveryCredentialAndItsPieces(t *testing.T) {
	t.Setenv("SYNCDESK_TEST_TOKEN", "tok-123456")
	t.Setenv("SYNCDESK_TEST_KEY", "key-abcdef")
	t.Setenv("SYNCDESK_TEST_HOOK", "whsec_MfKQ9r8GKYqr")
	t.Setenv("SYNCDESK_TEST_METRICS", "metrics-tok-9")
	basic := base64.StdEncoding.EncodeToString([]byte("ana:s3cret-pw"))
	path := writeFile(t, `
services:
  crm:
    base_url: https://crm.example.com
    headers:
      Authorization: "Bearer ${SYNCDESK_TEST_TOKEN}"
      X-Api-Key: "prefix-${SYNCDESK_TEST_KEY}"
      Content-Type: application/json
      Accept: application/json
    objects:
      order: {remote: deal, create: "POST /deals", update: "PUT /deals/{external_id}"}
  billing:
    base_url: https://billing.example.com
    headers: {Authorization: "Basic `+basic+`"}
    objects:
      order: {remote: invoice, create: "POST /invoices", update: "PUT /invoices/{external_id}"}
  payments:
    webhook: {scheme: standard, secrets: ["${SYNCDESK_TEST_HOOK}"]}
metrics: {access: token, token: "${SYNCDESK_TEST_METRICS}"}
`)
	cfg, err := Load(path, Overrides{})
	require.NoError(t, err)
	got := cfg.Secrets()
	for _, want := range []string{
		"Bearer tok-123456", "tok-123456", // the header, and the token after its scheme
		"prefix-key-abcdef", "key-abcdef", // the header, and the variable it names
		"Basic " + basic, basic, "ana:s3cret-pw", "s3cret-pw", // a Basic credential, decoded
		"whsec_MfKQ9r8GKYqr", "MfKQ9r8GKYqr", // a webhook secret, and its key without the prefix
		"metrics-tok-9",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "application/json", "the values of headers that excerpts show are no secret")
}
