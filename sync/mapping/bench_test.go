package mapping

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchCase is one representative mapping, its encoder and a record of the
// shape it is meant for. The lead will swap these for the shipped presets.
type benchCase struct {
	name    string
	fields  map[string]string
	encode  func(any) ([]byte, error)
	payload string
}

var benchCases = []benchCase{
	{
		name: "stripe_customer_form",
		fields: map[string]string{
			"email":                 ".email",
			"name":                  `.first_name + " " + .last_name`,
			"phone":                 ".phone",
			"description":           `"Customer \(.id)"`,
			"address.line1":         ".address.street",
			"address.city":          ".address.city",
			"address.postal_code":   ".address.zip",
			"address.country":       ".address.country",
			"metadata.syncdesk_key": "$key",
			"metadata.local_id":     "$local_id",
		},
		encode: Form,
		payload: `{"id":12345,"email":"ana.lopez@example.com","first_name":"Ana","last_name":"López",` +
			`"phone":"+33 6 12 34 56 78","address":{"street":"12 rue de la Paix","city":"Paris","zip":"75002","country":"FR"},` +
			`"created_at":"2026-03-01T10:00:00Z","tags":["vip","newsletter"]}`,
	},
	{
		name: "hubspot_contact_json",
		fields: map[string]string{
			"properties.email":          ".email",
			"properties.firstname":      ".first_name",
			"properties.lastname":       ".last_name",
			"properties.phone":          ".phone",
			"properties.company":        ".company // \"\"",
			"properties.lifecyclestage": `"customer"`,
			"properties.syncdesk_key":   "$key",
		},
		encode: JSON,
		payload: `{"id":12345,"email":"ana.lopez@example.com","first_name":"Ana","last_name":"López",` +
			`"phone":"+33 6 12 34 56 78","company":"Acme SAS","created_at":"2026-03-01T10:00:00Z"}`,
	},
	{
		name: "salesforce_account_json",
		fields: map[string]string{
			"Name":              ".name",
			"Phone":             ".phone",
			"Website":           ".website",
			"BillingCity":       ".address.city",
			"BillingCountry":    ".address.country",
			"NumberOfEmployees": ".employees",
		},
		encode: JSON,
		payload: `{"id":777,"name":"Acme SAS","phone":"+33 1 23 45 67 89","website":"https://acme.example",` +
			`"address":{"street":"1 avenue Foch","city":"Lyon","zip":"69006","country":"FR"},"employees":250,"industry":"Manufacturing"}`,
	},
}

// BenchmarkRender measures the mapping and encoding step alone, per record:
// decode the payload, evaluate every target, encode the body.
func BenchmarkRender(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			m, err := Compile(c.fields, "")
			require.NoError(b, err)
			payload := []byte(c.payload)
			v := Vars{Key: "sd-customer-12345", LocalID: "12345", LocalType: "customer"}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				body, err := m.Render(payload, v)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.encode(body); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/record")
		})
	}
}

// TestBenchCasesRender keeps the benchmark's mappings honest: each renders
// its record into the body its provider expects.
func TestBenchCasesRender(t *testing.T) {
	want := map[string]string{
		"stripe_customer_form": "address[city]=Paris&address[country]=FR&address[line1]=12+rue+de+la+Paix&address[postal_code]=75002" +
			"&description=Customer+12345&email=ana.lopez%40example.com&metadata[local_id]=12345&metadata[syncdesk_key]=sd-customer-12345" +
			"&name=Ana+L%C3%B3pez&phone=%2B33+6+12+34+56+78",
		"hubspot_contact_json": `{"properties":{"company":"Acme SAS","email":"ana.lopez@example.com","firstname":"Ana",` +
			`"lastname":"López","lifecyclestage":"customer","phone":"+33 6 12 34 56 78","syncdesk_key":"sd-customer-12345"}}`,
		"salesforce_account_json": `{"BillingCity":"Lyon","BillingCountry":"FR","Name":"Acme SAS","NumberOfEmployees":250,` +
			`"Phone":"+33 1 23 45 67 89","Website":"https://acme.example"}`,
	}
	for _, c := range benchCases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Compile(c.fields, "")
			require.NoError(t, err)
			body, err := m.Render([]byte(c.payload), Vars{Key: "sd-customer-12345", LocalID: "12345"})
			require.NoError(t, err)
			out, err := c.encode(body)
			require.NoError(t, err)
			require.Equal(t, want[c.name], string(out), fmt.Sprintf("%s body", c.name))
		})
	}
}
