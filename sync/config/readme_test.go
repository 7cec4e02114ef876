package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeConfig decodes the YAML block of README's Settings section, strictly,
// as syncdesk reads a file.
func readmeConfig(t *testing.T) Config {
	t.Helper()
	body, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(body), "```yaml\naddr:")
	require.True(t, ok, "README has the settings block, starting at addr:")
	block, _, ok = strings.Cut("addr:"+block, "```")
	require.True(t, ok)
	var cfg Config
	require.NoError(t, decode(strings.NewReader(block), &cfg), "README shows only keys syncdesk knows")
	return cfg
}

// README's settings block shows the defaults, but for the values it calls
// examples: a default changed in code, or in README alone, fails here.
func TestREADMEShowsTheDefaults(t *testing.T) {
	for _, v := range []string{"CRM_TOKEN", "CRM_WEBHOOK_SECRET", "CRM_WEBHOOK_SECRET_OLD"} {
		t.Setenv(v, "set-for-the-test")
	}
	readme := readmeConfig(t)
	crm := readme.Services["crm"]
	require.NotEmpty(t, crm.Objects, "README's example service")
	shop := readme.Sources["shop"]
	readme.Services, readme.Redact, readme.Sources = nil, nil, nil // examples
	if len(readme.TrustedProxies) == 0 {
		readme.TrustedProxies = nil // README writes []
	}
	require.Equal(t, Default(), readme, "README's top-level settings are the defaults")

	// A service that says only what README calls examples gets the rest by
	// default, the same values README shows.
	minimal := Service{BaseURL: crm.BaseURL, Headers: crm.Headers, Objects: map[string]Object{},
		Webhook: &Webhook{Scheme: crm.Webhook.Scheme, Secrets: crm.Webhook.Secrets, Effects: crm.Webhook.Effects}}
	for name, o := range crm.Objects {
		minimal.Objects[name] = Object{Remote: o.Remote, ExternalKey: o.ExternalKey, Create: o.Create, Update: o.Update,
			Lookup: o.Lookup, List: o.List}
	}
	cfg := Default()
	cfg.Services = map[string]Service{"crm": minimal}
	require.NoError(t, cfg.Complete())
	got := cfg.Services["crm"]
	require.Equal(t, crm.Kind, got.Kind)
	require.Equal(t, crm.IdempotencyHeader, got.IdempotencyHeader)
	require.Equal(t, crm.Timeout, got.Timeout)
	require.Equal(t, crm.Retry, got.Retry)
	require.Equal(t, crm.Breaker, got.Breaker)
	require.Equal(t, DefaultBreaker, got.Breaker)
	require.Equal(t, crm.LookupBeforeCreate, got.LookupBeforeCreate)
	require.Equal(t, crm.Reconcile.Every, got.Reconcile.Every)
	require.Equal(t, crm.Reconcile.Every, got.Reconcile.Period())
	require.Equal(t, crm.Reconcile.Manual, got.Reconcile.Manual)
	require.Equal(t, crm.Reconcile.MaxFixes, got.Reconcile.MaxFixes)
	require.Empty(t, crm.Reconcile.AutoFix)
	require.Empty(t, crm.Reconcile.Compare)
	for name, o := range crm.Objects {
		require.Equal(t, o.KeyField, got.Objects[name].KeyField, "%s.key_field", name)
		require.Equal(t, o.IDField, got.Objects[name].IDField, "%s.id_field", name)
	}
	require.Equal(t, 300*time.Second, crm.Webhook.Tolerance, "verify.DefaultTolerance, which a zero tolerance means")

	// A source that says only what README calls examples gets the rest by
	// default, the same values README shows.
	cfg = Default()
	cfg.Services = map[string]Service{"crm": minimal}
	cfg.Sources = map[string]Source{"shop": {Driver: shop.Driver, DSN: shop.DSN, Table: shop.Table}}
	t.Setenv("SHOP_DB_DSN", "postgres://shop@127.0.0.1/shop")
	require.NoError(t, cfg.Complete())
	shop.Types = nil // README writes {}
	require.Equal(t, shop, cfg.Sources["shop"])
	cfg.Sources = map[string]Source{"shop": {Driver: shop.Driver, DSN: shop.DSN, Query: "SELECT id, updated_at, doc AS payload FROM orders", Type: "order"}}
	require.NoError(t, cfg.Complete())
	require.Equal(t, time.Minute, cfg.Sources["shop"].RereadWindow, "README's reread_window")

	// The object defaults README states in words.
	bare := Default()
	bare.Services = map[string]Service{"erp": {BaseURL: "https://erp.example.com",
		Objects: map[string]Object{"order": {Create: "POST /orders", Update: "PUT /orders/{external_id}"}}}}
	require.NoError(t, bare.Complete())
	o := bare.Services["erp"].Objects["order"]
	require.Equal(t, "order", o.Remote, "remote: the type's name")
	require.Equal(t, "{local_type}_{local_id}", o.ExternalKey)
}
