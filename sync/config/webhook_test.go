package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// hook is a service whose webhook is the given YAML (indented under webhook:).
func hook(body string) string {
	return "services:\n  pay:\n    webhook:\n      scheme: stripe\n      secrets: [k]\n" + body
}

func TestABadEffectTableStopsTheStartNamingTheServiceAndKey(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{hook("      effects: stripe\n"), `setting services.pay.webhook.effects: "stripe" is not payments, crm or none`},
		{hook("      effects: {a.b: {}}\n"), `setting services.pay.webhook.effects.a.b: names no effect`},
		{hook("      states: [pending, paid]\n      paths: {id: .id}\n      effects: {a.b: {set_state: paid, adopt: true}}\n"),
			`setting services.pay.webhook.effects.a.b: names adopt and set_state: give one effect per event type`},
		{hook("      states: [pending, paid]\n      paths: {id: .id}\n      effects: {a.b: {set_state: shipped}}\n"),
			`setting services.pay.webhook.effects.a.b.set_state: "shipped" is not one of the states (pending, paid)`},
		{hook("      paths: {id: .id}\n      effects: {a.b: {update_fields: {email: .email | nosuchfn}}}\n"),
			`setting services.pay.webhook.effects.a.b.update_fields: unknown function nosuchfn`},
		{hook("      paths: {id: .id}\n      effects: {a.b: {update_fields: {address.city: .city}}}\n"),
			`setting services.pay.webhook.effects.a.b.update_fields: a field of the record, by its top-level name`},
		{hook("      paths: {id: '.data.object.id |'}\n      effects: {a.b: ignore}\n"), `setting services.pay.webhook.paths.id: the expression ".data.object.id |" does not parse`},
		{hook("      effects: {a.b: {mark_deleted: soon, id: .id}}\n"), `setting services.pay.webhook.effects.a.b.mark_deleted: "soon" is not leave or recreate`},
		{hook("      effects: {a.b: {mark_deleted: leave}}\n"), `setting services.pay.webhook.effects.a.b: says nowhere where the event names its object`},
		{hook("      effects: {'[a': ignore}\n"), `setting services.pay.webhook.effects.[a: not an event type or a pattern`},
		{hook("      effects: {a.b: {new_records: x, id: .id}}\n"), `setting services.pay.webhook.effects.a.b: names no effect`},
		{hook("      effects: {a.b: {ignore: true, new_records: x}}\n"), `setting services.pay.webhook.effects.a.b.new_records: only an adopt effect makes new records`},
		{hook("      effects: {a.b: {adopt: true, key: .k, new_records: x}}\n"), `setting services.pay.webhook.effects.a.b.new_records: a new record is known by the provider's id`},
		{hook("      effects: {a.b: skip}\n"), `"skip" is not an effect: write ignore`},
		{hook("      effects: {a.b: {mark_deleted: leave, idd: .id}}\n"), `line 6: "idd" is not a setting of an effect`},
		{hook("      url: /hooks/pay\n"), `setting services.pay.webhook.url: "/hooks/pay" is not an http(s) URL`},
		{"services:\n  pay:\n    webhook: {scheme: hubspot, secrets: [k]}\n", `setting services.pay.webhook.event_id: HubSpot sends a list of events`},
	} {
		_, err := Load(writeFile(t, tc.yaml), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}

func TestAnEffectTableLoads(t *testing.T) {
	cfg, err := Load(writeFile(t, hook(`      states: [pending, paid, refunded]
      paths: {object: .data.object, id: .data.object.id, key: .data.object.metadata.k}
      effects:
        payment_intent.succeeded: {set_state: paid}
        charge.refunded: {set_state: refunded, id: .data.object.payment_intent}
        customer.deleted: {mark_deleted: recreate}
        customer.updated: {update_fields: {email: .data.object.email}}
        "customer.*": {adopt: true, new_records: "{service}_customer"}
        "*": ignore
`)), Overrides{})
	require.NoError(t, err)
	w, err := cfg.Services["pay"].Webhook.Resolved()
	require.NoError(t, err)
	for typ, want := range map[string]string{
		"payment_intent.succeeded": "payment_intent.succeeded", "customer.deleted": "customer.deleted",
		"customer.created": "customer.*", "invoice.paid": "*",
	} {
		_, key, ok := w.EffectFor(typ)
		require.True(t, ok, typ)
		require.Equal(t, want, key, "%s: an exact entry first, then the longest pattern", typ)
	}
	e, _, _ := w.EffectFor("charge.refunded")
	require.Equal(t, EffectSetState, e.Kind())
	require.Equal(t, ".data.object.payment_intent", e.EventPaths.WithDefaults(w.Paths).ID, "the effect's own path first")
	require.Equal(t, ".data.object.metadata.k", e.EventPaths.WithDefaults(w.Paths).Key, "the webhook's where the effect says nothing")
	require.Equal(t, ".type", w.EventType)
	require.Equal(t, "status", w.StateField)
}

// The demo's sets are tables shipped in the binary; each loads and names
// what the Go effects named before.
func TestTheShippedTablesLoad(t *testing.T) {
	for set, types := range map[string][]string{
		"payments": {"payment.succeeded", "payment.refunded"},
		"crm":      {"deal.updated", "deal.deleted", "contact.created"},
	} {
		w, err := Webhook{Scheme: "stripe", Secrets: []string{"k"}, Effects: EffectSet(set)}.Resolved()
		require.NoError(t, err, set)
		require.Empty(t, w.validate("demo", nil), set)
		for _, typ := range types {
			_, key, ok := w.EffectFor(typ)
			require.True(t, ok, "%s: %s", set, typ)
			require.Equal(t, typ, key)
		}
		_, _, ok := w.EffectFor("something.else")
		require.False(t, ok, "%s: any other type has no effect", set)
	}
}

// A preset's webhook settings apply only where the file asks for webhooks.
func TestAPresetsWebhookIsTakenOnlyWhenAsked(t *testing.T) {
	cfg, err := loadPresets(t, presetFile)
	require.NoError(t, err)
	require.Nil(t, cfg.Services["stripe"].Webhook, "no webhook: key, no webhook")

	cfg, err = loadPresets(t, `
services:
  stripe:
    preset: stripe
    headers: {Authorization: "Bearer ${TEST_STRIPE_KEY}"}
    webhook: {secrets: [whsec_x]}
    objects: {payment: {remote: payment_intent}}
  hubspot:
    preset: hubspot
    headers: {Authorization: "Bearer ${TEST_HUBSPOT_TOKEN}"}
    webhook:
      secrets: [client-secret]
      effects: {contact.creation: {adopt: true}}
    objects: {contact: {}}
`)
	require.NoError(t, err)
	s := cfg.Services["stripe"].Webhook
	require.Equal(t, "stripe", s.Scheme)
	e, _, ok := s.EffectFor("payment_intent.succeeded")
	require.True(t, ok)
	require.Equal(t, "paid", e.SetState)
	h := cfg.Services["hubspot"].Webhook
	require.Equal(t, "hubspot", h.Scheme)
	require.NotEmpty(t, h.EventID)
	e, _, _ = h.EffectFor("contact.creation")
	require.Equal(t, EffectAdopt, e.Kind(), "the file's entry merges into the preset's table")
	e, _, _ = h.EffectFor("contact.deletion")
	require.Equal(t, EffectMarkDeleted, e.Kind(), "the preset's entries stay")
}
