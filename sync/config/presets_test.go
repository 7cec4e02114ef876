package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// presetFile is a complete configuration of the three presets, as README
// shows them.
const presetFile = `
services:
  stripe:
    preset: stripe
    headers: {Authorization: "Bearer ${TEST_STRIPE_KEY}"}
    objects:
      customer: {}
      payment: {remote: payment_intent}
  hubspot:
    preset: hubspot
    headers: {Authorization: "Bearer ${TEST_HUBSPOT_TOKEN}"}
    objects:
      contact:
        body: {properties.phone: .phone, properties.lastname: ~}
  salesforce:
    preset: salesforce
    base_url: https://acme.my.salesforce.com
    auth: {client_id: "${TEST_SF_ID}", client_secret: "${TEST_SF_SECRET}"}
    objects:
      account: {remote: Account, key_field: Syncdesk_Key__c}
`

func loadPresets(t *testing.T, body string) (Config, error) {
	t.Helper()
	for _, v := range []string{"TEST_STRIPE_KEY", "TEST_HUBSPOT_TOKEN", "TEST_SF_ID", "TEST_SF_SECRET"} {
		t.Setenv(v, "x-"+strings.ToLower(v))
	}
	return Load(writeFile(t, body), Overrides{})
}

func TestPresetsExpandAndCanBeOverriddenKeyByKey(t *testing.T) {
	cfg, err := loadPresets(t, presetFile)
	require.NoError(t, err)

	st := cfg.Services["stripe"]
	require.Equal(t, "https://api.stripe.com", st.BaseURL)
	require.Equal(t, 24*time.Hour, st.IdempotencyWindow)
	require.Equal(t, "form", st.Objects["customer"].Encoding)
	require.Equal(t, "POST /v1/customers", st.Objects["customer"].Create)
	require.Equal(t, "payment_intent", st.Objects["payment"].Remote)
	require.Equal(t, "POST /v1/payment_intents", st.Objects["payment"].Create)

	hs := cfg.Services["hubspot"].Objects["contact"]
	require.Equal(t, map[string]string{"properties.email": ".email", "properties.firstname": ".first_name",
		"properties.phone": ".phone", "properties.syncdesk_key": "$key"}, hs.Body.Fields,
		"a body key added, one taken away with ~, the rest the preset's")
	require.Equal(t, 409, hs.Conflict.Status)

	sf := cfg.Services["salesforce"]
	require.Equal(t, "https://acme.my.salesforce.com", sf.BaseURL, "the file's base_url wins")
	require.Equal(t, "oauth2", sf.Auth.Type, "the preset's auth, with the file's credentials")
	require.Equal(t, "${TEST_SF_SECRET}", sf.Auth.ClientSecret)
	acc := sf.Objects["account"]
	require.Equal(t, "PATCH /services/data/v60.0/sobjects/Account/Syncdesk_Key__c/{external_key}", acc.Upsert)
	require.Equal(t, "GET /services/data/v60.0/query?q=SELECT Id, Syncdesk_Key__c FROM Account", acc.List)
}

func TestEveryPresetSaysItsGuarantee(t *testing.T) {
	cfg, err := loadPresets(t, presetFile)
	require.NoError(t, err)
	for _, tc := range []struct{ svc, typ, words string }{
		{"stripe", "customer", "idempotency key, replayed by Stripe for 24 h; after that, a search by key"},
		{"stripe", "payment", "idempotency key, replayed by Stripe for 24 h; after that, a search by key"},
		{"hubspot", "contact", "unique property, 409 adopted; after an unknown outcome, read by that property first"},
		{"salesforce", "account", "upsert by external ID: a repeat updates the same object"},
	} {
		g := cfg.Services[tc.svc].Guarantee(tc.typ)
		require.True(t, g.Safe, tc.svc)
		require.Equal(t, tc.words, g.Words, tc.svc)
	}
	bare := Service{Objects: map[string]Object{"a": {}, "b": {Lookup: "POST /search", LookupConsistency: "eventual"}}}
	require.Equal(t, Guarantee{"none: a lost answer may become a second object", false}, bare.Guarantee("a"))
	require.False(t, bare.Guarantee("b").Safe, "a search that can lag is no guard on its own")
}

func TestABadPresetOrMappingStopsTheStartNamingTheSetting(t *testing.T) {
	for body, want := range map[string]string{
		"services:\n  s:\n    preset: zendesk\n": `setting services.s.preset: "zendesk" is not a preset (hubspot, salesforce, stripe)`,
		"services:\n  s:\n    preset: stripe\n    headers: {Authorization: x}\n    objects:\n      customer: {remote: invoice}\n":                                             `setting services.s.objects.customer.remote: the stripe preset has no object "invoice" (customer, payment_intent)`,
		"services:\n  s:\n    preset: stripe\n    headers: {Authorization: x}\n    objects:\n      customer:\n        fields: [email, name]\n        body: {phone: .phone}\n": `setting services.s.objects.customer.body.phone: reads .phone, which records of this type do not carry (fields: email, name)`,
		"services:\n  s:\n    preset: stripe\n    headers: {Authorization: x}\n    objects:\n      customer:\n        body: {email: .email | nosuchfn}\n":                     `setting services.s.objects.customer.body.email: `,
		"services:\n  s:\n    preset: hubspot\n    objects:\n      contact:\n        conflict: {status: 409, id_pattern: 'no group'}\n":                                       `setting services.s.objects.contact.conflict.id_pattern: must be a regular expression whose first group is the id`,
		"services:\n  s:\n    preset: hubspot\n    objects:\n      deal:\n        paging: {style: pages}\n":                                                                   `setting services.s.objects.deal.paging.style: "pages" is not cursor, starting_after or next_url`,
		"services:\n  s:\n    preset: stripe\n    objects:\n      customer: {encoding: xml}\n":                                                                                `setting services.s.objects.customer.encoding: "xml" is not json or form`,
	} {
		_, err := loadPresets(t, body)
		require.Error(t, err, body)
		require.Contains(t, err.Error(), want, body)
	}
}

func TestAMisspeltSettingUnderAPresetIsReportedAtItsLine(t *testing.T) {
	_, err := loadPresets(t, "services:\n  s:\n    preset: stripe\n    objects:\n      customer: {encodng: form}\n")
	require.ErrorContains(t, err, "setting services.s.objects.customer.encodng: there is no such setting (line 5)")
}

func TestEveryShippedPresetIsReadable(t *testing.T) {
	require.Equal(t, []string{"hubspot", "salesforce", "stripe"}, Presets())
	for _, p := range Presets() {
		raw, err := presetFiles.ReadFile("presets/" + p + ".yaml")
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		var svc Service
		require.NoError(t, dec.Decode(&svc), p)
		require.NotEmpty(t, svc.Objects, p)
		require.NotEmpty(t, svc.Provider, p)
	}
}

// README's example of each preset loads as it stands.
func TestREADMEPresetExamplesLoad(t *testing.T) {
	body, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(body), "## Real providers")
	require.True(t, ok)
	section, _, _ = strings.Cut(section, "\n## ")
	for _, v := range []string{"STRIPE_SECRET_KEY", "HUBSPOT_TOKEN", "SF_CLIENT_ID", "SF_CLIENT_SECRET"} {
		t.Setenv(v, "set-for-the-test")
	}
	n := 0
	for _, block := range strings.Split(section, "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if !strings.HasPrefix(block, "services:") {
			continue
		}
		n++
		cfg, err := Load(writeFile(t, block), Overrides{})
		require.NoError(t, err, block)
		for name, svc := range cfg.Services {
			for typ := range svc.Objects {
				require.True(t, svc.Guarantee(typ).Safe, "%s.%s", name, typ)
			}
		}
	}
	require.Equal(t, 3, n, "an example per preset")
}

// The presets ship their providers' refusals that mean "later", and a
// file's answers replace the preset's whole list (a list is replaced, not
// merged: README, "Real providers").
func TestPresetsShipTheirAnswers(t *testing.T) {
	cfg, err := loadPresets(t, presetFile)
	require.NoError(t, err)
	sf := cfg.Services["salesforce"].Answers
	require.Len(t, sf, 2)
	require.Equal(t, Answer{Status: 403, Body: "REQUEST_LIMIT_EXCEEDED", Hold: time.Hour, Quota: true,
		Means: "the org's API requests for the last 24 hours are used up"}, sf[1])
	hs := cfg.Services["hubspot"].Answers
	require.Equal(t, []int{429, 423, 477}, []int{hs[0].Status, hs[1].Status, hs[2].Status})
	require.Empty(t, cfg.Services["stripe"].Answers)

	cfg, err = loadPresets(t, "services:\n  s:\n    preset: hubspot\n    headers: {Authorization: x}\n    objects: {contact: {}}\n    answers: [{status: 423, hold: 5s}]\n")
	require.NoError(t, err)
	require.Equal(t, []Answer{{Status: 423, Hold: 5 * time.Second}}, cfg.Services["s"].Answers)
}
