package connector

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
)

// presetBodies are the presets' shipped objects with a record each, as the
// engine hands them to the connector.
var presetBodies = []struct {
	name, preset, object, payload string
}{
	{"stripe/customer", "stripe", "customer", `{"email":"ada@example.com","name":"Ada Lovelace","phone":"+44 20 7946 0000"}`},
	{"stripe/payment_intent", "stripe", "payment_intent", `{"amount":1999,"currency":"eur","note":"order 1"}`},
	{"hubspot/contact", "hubspot", "contact", `{"email":"ada@example.com","first_name":"Ada","last_name":"Lovelace"}`},
	{"hubspot/deal", "hubspot", "deal", `{"name":"Order 1","amount":"19.99","stage":"closedwon"}`},
	{"salesforce/Account", "salesforce", "Account", `{"Name":"Acme","Phone":"+1 415 555 0100","Industry":"Retail","NumberOfEmployees":120}`},
}

// loadServices loads a configuration file's services, as syncdesk does.
func loadServices(tb testing.TB, file string) map[string]config.Service {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "syncdesk.yaml")
	require.NoError(tb, os.WriteFile(p, []byte(file), 0o600))
	cfg, err := config.Load(p, config.Overrides{})
	require.NoError(tb, err)
	return cfg.Services
}

// presetObject loads one preset's object through the configuration, as a
// file naming the preset does.
func presetObject(tb testing.TB, preset, remote string) object {
	tb.Helper()
	file := "services:\n  p:\n    preset: " + preset + "\n    base_url: https://p.example\n    headers: {A: b}\n" +
		"    auth: {client_id: a, client_secret: b}\n    objects:\n      t: {remote: " + remote + "}\n"
	if preset != "salesforce" {
		file = "services:\n  p:\n    preset: " + preset + "\n    headers: {A: b}\n    objects:\n      t: {remote: " + remote + "}\n"
	}
	o := prepare("p", "t", loadServices(tb, file)["p"].Objects["t"])
	require.NoError(tb, o.err)
	return o
}

// BenchmarkPresetBodies measures the mapping and encoding step alone: a
// record's payload into the body each preset sends (µs/record).
func BenchmarkPresetBodies(b *testing.B) {
	for _, tc := range presetBodies {
		b.Run(tc.name, func(b *testing.B) {
			o := presetObject(b, tc.preset, tc.object)
			r := Record{LocalType: "t", LocalID: "1", Key: "t_1", Payload: []byte(tc.payload)}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := o.render(r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/record")
		})
	}
}

// Each preset's body, as the benchmark builds it, is what its provider
// reads.
func TestPresetBodies(t *testing.T) {
	want := map[string]string{
		"stripe/customer":       "email=ada%40example.com&metadata[syncdesk_key]=t_1&name=Ada+Lovelace",
		"stripe/payment_intent": "amount=1999&currency=eur&metadata[syncdesk_key]=t_1",
		"hubspot/contact":       `{"properties":{"email":"ada@example.com","firstname":"Ada","lastname":"Lovelace","syncdesk_key":"t_1"}}`,
		"hubspot/deal":          `{"properties":{"amount":"19.99","dealname":"Order 1","dealstage":"closedwon","syncdesk_key":"t_1"}}`,
		"salesforce/Account":    `{"Industry":"Retail","Name":"Acme","NumberOfEmployees":120,"Phone":"+1 415 555 0100"}`,
	}
	for _, tc := range presetBodies {
		o := presetObject(t, tc.preset, tc.object)
		body, _, err := o.render(Record{LocalType: "t", LocalID: "1", Key: "t_1", Payload: []byte(tc.payload)})
		require.NoError(t, err, tc.name)
		require.Equal(t, want[tc.name], string(body), tc.name)
	}
}
