package models

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestErrorGroupStripsWhatDiffers(t *testing.T) {
	same := []string{
		`HTTP 404: no deal deal_123`,
		`HTTP 404: no deal deal_98765`,
	}
	require.Equal(t, ErrorGroup("crm", 404, same[0]), ErrorGroup("crm", 404, same[1]))
	require.Equal(t, "crm · HTTP 404 · no deal ID", ErrorGroup("crm", 404, same[0]))
	require.Equal(t, ErrorGroup("payments", 422, `HTTP 422: amount 0 must be positive for "site_order_1"`),
		ErrorGroup("payments", 422, `HTTP 422: amount 5 must be positive for "site_order_77"`))
	require.NotEqual(t, ErrorGroup("crm", 422, "title is required"), ErrorGroup("payments", 422, "title is required"))
	require.NotEqual(t, ErrorGroup("crm", 422, "title is required"), ErrorGroup("crm", 400, "title is required"))
	// Without an HTTP answer the message says what happened; the group does
	// not claim "no answer" for a link that was never sent.
	require.Equal(t, "crm · gave up after N attempts; last: no answer within Ns",
		ErrorGroup("crm", 0, "gave up after 6 attempts; last: no answer within 5s"))
	require.Equal(t, "erp · order is no longer routed to erp in the configuration",
		ErrorGroup("erp", 0, "order is no longer routed to erp in the configuration"))
	require.Equal(t, "crm · marked failed by an operator", ErrorGroup("crm", 0, "marked failed by an operator"))
	require.Equal(t, ErrorGroup("crm", 500, "request 9f86d081884c7d65 failed"), ErrorGroup("crm", 500, "request 2c26b46b68ffc68f failed"))
}
