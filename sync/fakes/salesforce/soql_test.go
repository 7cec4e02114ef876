package salesforce

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func ptr(s string) *string { return &s }

func TestParseSOQL(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want soql
	}{
		{"SELECT Id FROM Account", soql{fields: []string{"Id"}, object: "Account", limit: -1}},
		{"select Id,Name , Key__c from Account where Key__c = 'x' order by Name desc limit 5",
			soql{fields: []string{"Id", "Name", "Key__c"}, object: "Account",
				where: []condition{{field: "Key__c", value: ptr("x")}}, orderBy: "Name", desc: true, limit: 5}},
		{`SELECT Id FROM Account WHERE Name = 'O\'Neil\\s' AND Key__c != null AND Amount__c = -1.5 AND Active__c = TRUE ORDER BY Id ASC`,
			soql{fields: []string{"Id"}, object: "Account", limit: -1, orderBy: "Id", where: []condition{
				{field: "Name", value: ptr(`O'Neil\s`)},
				{field: "Key__c", not: true},
				{field: "Amount__c", value: ptr("-1.5")},
				{field: "Active__c", value: ptr("true")},
			}}},
		{"SELECT Id FROM Account WHERE Name='a\\nb'", soql{fields: []string{"Id"}, object: "Account", limit: -1,
			where: []condition{{field: "Name", value: ptr("a\nb")}}}},
	} {
		got, err := parseSOQL(tc.q)
		require.NoError(t, err, tc.q)
		require.Equal(t, tc.want, got, tc.q)
	}
}

func TestParseSOQLRefuses(t *testing.T) {
	for q, msg := range map[string]string{
		"":                                                "unexpected end of query",
		"SELECT":                                          "unexpected end of query",
		"SELECT Id FORM Account":                          "unexpected token: 'FORM'",
		"SELECT Id, FROM Account":                         "unexpected token: 'FROM'",
		"SELECT Id FROM Account WHERE":                    "unexpected end of query",
		"SELECT Id FROM Account WHERE Name":               "unexpected end of query",
		"SELECT Id FROM Account WHERE Name = ":            "unexpected end of query",
		"SELECT Id FROM Account WHERE Name = 'x":          "unterminated string",
		"SELECT Id FROM Account WHERE Name = 'x\\q'":      "invalid escape sequence: '\\q'",
		"SELECT Id FROM Account WHERE Name = \"x\"":       "unexpected token: '\"'",
		"SELECT Id FROM Account WHERE Name < 'x'":         "unexpected token: '<'",
		"SELECT Id FROM Account WHERE A = 'x' OR B = 'y'": "unexpected token: 'OR'",
		"SELECT Id FROM Account LIMIT -1":                 "unexpected token: '-1'",
		"SELECT Id FROM Account LIMIT 2 extra":            "unexpected token: 'extra'",
		"SELECT Id FROM Account ORDER Name":               "unexpected token: 'Name'",
		"SELECT Account.Name FROM Contact":                "unexpected token: '.'",
		"SELECT (SELECT Id FROM Contacts) FROM Account":   "unexpected token: '('",
	} {
		_, err := parseSOQL(q)
		require.EqualError(t, err, msg, q)
	}
}

// FuzzParseSOQL feeds the parser arbitrary text: it must answer a query or
// an error, never panic, and a query it accepts names an object and fields.
func FuzzParseSOQL(f *testing.F) {
	for _, seed := range []string{
		"SELECT Id FROM Account",
		"SELECT Id, Name FROM Account WHERE Key__c = 'x' AND Name != null ORDER BY Id DESC LIMIT 10",
		`SELECT Id FROM Account WHERE Name = 'a\'b\\c\n'`,
		"SELECT Id FROM Account WHERE Amount__c = -12.5",
		"select id from account where x = 'unterminated",
		"SELECT Id FROM Account WHERE Name = 'é'",
		"\x00SELECT",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got, err := parseSOQL(q)
		if err != nil {
			return
		}
		if got.object == "" || len(got.fields) == 0 {
			t.Fatalf("accepted %q without an object or fields: %+v", q, got)
		}
		for _, c := range got.where {
			if c.field == "" {
				t.Fatalf("accepted %q with a condition on no field", q)
			}
		}
	})
}
