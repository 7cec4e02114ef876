package reconcile

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/mapping"
)

func mappedType(t *testing.T, keyField string, fields map[string]string, compare []string) objectType {
	t.Helper()
	m, err := mapping.Compile(fields, "")
	require.NoError(t, err)
	return objectType{name: "contact", obj: config.Object{KeyField: keyField, IDField: "id"}, body: m, compare: compare}
}

// A mapped object is compared with the body the record would be sent as,
// in the provider's own shape and types.
func TestAMappedObjectIsComparedWithItsBody(t *testing.T) {
	hub := mappedType(t, "properties.syncdesk_key", map[string]string{"properties.email": ".email",
		"properties.amount": ".amount", "properties.syncdesk_key": "$key", "properties.phone": ".phone // null"}, nil)
	payload := `{"email":"a@example.com","amount":19.9}`
	for remote, want := range map[string][]string{
		// HubSpot answers every property as a string, and an empty one as null.
		`{"properties":{"email":"a@example.com","amount":"19.90","syncdesk_key":"contact_1","phone":null}}`: nil,
		`{"properties":{"email":"b@example.com","amount":"19.90","syncdesk_key":"contact_1","phone":null}}`: {"properties.email"},
		`{"properties":{"email":"a@example.com","amount":"20","syncdesk_key":"other","phone":"+1"}}`:        {"properties.amount", "properties.phone"},
		`{"properties":{"syncdesk_key":"contact_1"}}`:                                                       nil, // the listing brought no other property: nothing to compare
	} {
		require.Equal(t, want, diffFields(payload, remote, hub), remote)
	}
	require.Equal(t, []string{"(the record cannot be mapped: body.properties.email: reads .email, which the record's payload does not have)"},
		diffFields(`{"amount":1}`, `{}`, hub))

	only := mappedType(t, "metadata.k", map[string]string{"email": ".email", "name": ".name"}, []string{"name"})
	require.Empty(t, diffFields(`{"email":"a@x","name":"A"}`, `{"email":"b@x","name":"A"}`, only), "compare names the paths")
}
