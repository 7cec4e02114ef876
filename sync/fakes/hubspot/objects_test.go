package hubspot

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A create answers 201 with the object as HubSpot shapes it, and the object
// reads back by id at once.
func TestCreateThenReadByID(t *testing.T) {
	b := setup(t, Options{})
	a := b.call(t, http.MethodPost, "/crm/v3/objects/contacts", props("email", "ada@example.com", "firstname", "Ada"))
	require.Equal(t, http.StatusCreated, a.status, a.raw)
	id, _ := a.body["id"].(string)
	require.NotEmpty(t, id)
	require.Equal(t, false, a.body["archived"])
	require.Equal(t, "2026-03-02T09:00:00.000Z", a.body["createdAt"])
	require.Equal(t, a.body["createdAt"], a.body["updatedAt"])
	require.Equal(t, "Ada", a.prop("firstname"))
	require.Equal(t, id, a.prop("hs_object_id"))

	got := b.call(t, http.MethodGet, "/crm/v3/objects/contacts/"+id, nil)
	require.Equal(t, http.StatusOK, got.status, got.raw)
	require.Equal(t, "ada@example.com", got.prop("email"))

	some := b.call(t, http.MethodGet, "/crm/v3/objects/contacts/"+id+"?properties=firstname,lastname", nil)
	require.Equal(t, "Ada", some.prop("firstname"))
	require.Contains(t, some.body["properties"], "lastname", "a property asked for is answered, null when unset")
	require.Nil(t, some.prop("lastname"))
	require.NotContains(t, some.body["properties"], "email", "a property not asked for is left out")

	require.Equal(t, 1, b.fake.Stats().Creates)
	require.Equal(t, 1, b.fake.Stats().Requests["POST /crm/v3/objects/contacts"])
	require.Equal(t, 2, b.fake.Stats().Requests["GET /crm/v3/objects/contacts/{id}"])
}

// idProperty reads and updates by a unique property's value, at once (no
// search lag), and an absent value is HubSpot's 404.
func TestReadAndUpdateByIDProperty(t *testing.T) {
	b := setup(t, Options{SearchLag: time.Hour})
	created := b.call(t, http.MethodPost, "/crm/v3/objects/deals", props("dealname", "Big", "syncdesk_key", "order-7"))
	require.Equal(t, http.StatusCreated, created.status, created.raw)
	id := created.body["id"].(string)

	got := b.call(t, http.MethodGet, "/crm/v3/objects/deals/order-7?idProperty=syncdesk_key", nil)
	require.Equal(t, http.StatusOK, got.status, got.raw)
	require.Equal(t, id, got.body["id"])

	b.clock.Advance(time.Minute)
	upd := b.call(t, http.MethodPatch, "/crm/v3/objects/deals/order-7?idProperty=syncdesk_key", props("amount", "1200"))
	require.Equal(t, http.StatusOK, upd.status, upd.raw)
	require.Equal(t, id, upd.body["id"])
	require.Equal(t, "1200", upd.prop("amount"))
	require.Equal(t, "Big", upd.prop("dealname"), "an update keeps what it does not name")
	require.Equal(t, "2026-03-02T09:01:00.000Z", upd.body["updatedAt"])
	require.Equal(t, "1200", b.fake.Objects("deals")[0].Properties["amount"])

	// Moving the key moves the index: the old value finds nothing.
	moved := b.call(t, http.MethodPatch, "/crm/v3/objects/deals/"+id, props("syncdesk_key", "order-8"))
	require.Equal(t, http.StatusOK, moved.status, moved.raw)
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/crm/v3/objects/deals/order-8?idProperty=syncdesk_key", nil).status)

	for _, path := range []string{
		"/crm/v3/objects/deals/order-7?idProperty=syncdesk_key",
		"/crm/v3/objects/deals/999999",
	} {
		missing := b.call(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusNotFound, missing.status, path)
		require.Equal(t, "error", missing.body["status"])
		require.Equal(t, "OBJECT_NOT_FOUND", missing.body["category"])
		require.NotEmpty(t, missing.body["correlationId"])
		patch := b.call(t, http.MethodPatch, path, props("amount", "1"))
		require.Equal(t, http.StatusNotFound, patch.status, path)
	}

	email := b.call(t, http.MethodPost, "/crm/v3/objects/contacts", props("email", "Grace@Example.com"))
	require.Equal(t, http.StatusCreated, email.status)
	byEmail := b.call(t, http.MethodGet, "/crm/v3/objects/contacts/"+url.PathEscape("grace@example.com")+"?idProperty=email", nil)
	require.Equal(t, http.StatusOK, byEmail.status, "email is unique without regard to case")
	require.Equal(t, email.body["id"], byEmail.body["id"])

	notUnique := b.call(t, http.MethodGet, "/crm/v3/objects/deals/Big?idProperty=dealname", nil)
	require.Equal(t, http.StatusBadRequest, notUnique.status, "only a unique property identifies an object")
	require.Equal(t, "VALIDATION_ERROR", notUnique.body["category"])
}

// Requests the fake cannot take are refused in HubSpot's shape, and
// nothing is stored.
func TestValidationAnd401(t *testing.T) {
	b := setup(t, Options{Tokens: []string{testToken}})

	unknown := b.call(t, http.MethodPost, "/crm/v3/objects/contacts", props("email", "a@example.com", "favourite_colour", "teal"))
	require.Equal(t, http.StatusBadRequest, unknown.status)
	require.Equal(t, "VALIDATION_ERROR", unknown.body["category"])
	require.Contains(t, unknown.body["message"], "Property values were not valid")
	require.Contains(t, unknown.body["message"], `\"favourite_colour\" does not exist`)
	details := unknown.body["errors"].([]any)[0].(map[string]any)
	require.Equal(t, "PROPERTY_DOESNT_EXIST", details["code"])

	for name, body := range map[string]any{
		"bad JSON":       `{"properties": {"email": `,
		"no body":        "",
		"nested value":   map[string]any{"properties": map[string]any{"email": map[string]any{"x": 1}}},
		"read-only prop": props("hs_object_id", "5"),
	} {
		a := b.call(t, http.MethodPost, "/crm/v3/objects/contacts", body)
		require.Equal(t, http.StatusBadRequest, a.status, name)
		require.Equal(t, "VALIDATION_ERROR", a.body["category"], name)
	}
	patch := b.call(t, http.MethodPatch, "/crm/v3/objects/contacts/1", props("nope", "x"))
	require.Equal(t, http.StatusBadRequest, patch.status)

	typ := b.call(t, http.MethodPost, "/crm/v3/objects/widgets", props("name", "x"))
	require.Equal(t, http.StatusBadRequest, typ.status)
	require.Contains(t, typ.body["message"], "widgets")

	for _, token := range []string{"", "pat-na1-someone-else"} {
		a := b.callAs(t, token, http.MethodPost, "/crm/v3/objects/contacts", props("email", "a@example.com"))
		require.Equal(t, http.StatusUnauthorized, a.status)
		require.Equal(t, "INVALID_AUTHENTICATION", a.body["category"])
		require.True(t, strings.HasPrefix(a.body["message"].(string), "Authentication credentials not found."))
	}

	require.Empty(t, b.fake.Objects("contacts"))
	require.Zero(t, b.fake.Stats().Creates)
}

// Numbers and booleans are stored as HubSpot stores every value: as text.
func TestValuesAreText(t *testing.T) {
	b := setup(t, Options{})
	a := b.call(t, http.MethodPost, "/crm/v3/objects/deals", map[string]any{"properties": map[string]any{"amount": 12.5, "syncdesk_key": true}})
	require.Equal(t, http.StatusCreated, a.status, a.raw)
	require.Equal(t, "12.5", a.prop("amount"))
	require.Equal(t, 1, b.fake.CountByProperty("deals", "syncdesk_key", "true"))
}
