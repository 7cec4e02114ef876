package connector

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/fakes/stripemock"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Stripe's own mock server (stripe-mock, pinned in go.mod) checks every
// request the Stripe preset sends — create, update, list and search — against
// Stripe's published API definition, and refuses a malformed one with 400.
// stripe-mock keeps no state and answers with fixtures, so what is asserted
// is its verdict on each request, not what the fixtures hold.
func TestStripeMockAcceptsEveryRequestOfTheStripePreset(t *testing.T) {
	mock := stripemock.Start(t)
	t.Setenv("TEST_STRIPE_MOCK_KEY", stripemock.APIKey)
	file := "services:\n  stripe:\n    preset: stripe\n    base_url: " + mock.URL +
		"\n    headers: {Authorization: \"Bearer ${TEST_STRIPE_MOCK_KEY}\"}\n    objects:\n" +
		"      customer: {}\n      payment: {remote: payment_intent}\n"
	stripe := loadServices(t, file)["stripe"]
	c := NewHTTP("stripe", stripe, redact.New(nil), nil)
	ctx := context.Background()

	payloads := map[string]string{
		"customer": `{"email":"ada@example.com","name":"Ada Lovelace"}`,
		"payment":  `{"amount":1999,"currency":"eur"}`,
	}
	sent := 0
	accepted := func(call Call) {
		t.Helper()
		sent++
		require.Equal(t, 200, call.HTTPCode, "%s refused: %s\n%s", call.Operation, call.Error, call.Request)
	}
	for typ, payload := range payloads {
		rec := Record{LocalType: typ, LocalID: "1", Key: typ + "_1", Payload: []byte(payload)}
		created := c.Create(ctx, rec, typ+"-1-create")
		accepted(created)
		require.NotEmpty(t, created.ExternalID)

		rec.ExternalID = created.ExternalID
		accepted(c.Update(ctx, rec))
		accepted(c.Lookup(ctx, typ, rec.Key))

		page, call := c.List(ctx, typ, "")
		accepted(call)
		require.NotEmpty(t, page.Items)
		_, call = c.List(ctx, typ, stripe.Objects[typ].IDOf(page.Items[len(page.Items)-1]))
		accepted(call) // the next page, starting_after the last id
	}
	require.Equal(t, 10, sent)
}
