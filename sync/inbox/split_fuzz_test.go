package inbox

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox/verify"
)

// Whatever a verified body holds, split either refuses it in words or
// gives events that each have an id and a type fit to store, sorted by id.
func FuzzSplitABatch(f *testing.F) {
	for _, s := range []string{
		`[{"eventId":1,"subscriptionId":7,"subscriptionType":"contact.propertyChange","objectId":5}]`,
		`[{"eventId":1,"subscriptionId":7},{"eventId":1,"subscriptionId":7}]`,
		`[]`, `[1, "x", null]`, `[{"eventId":{"a":1},"subscriptionId":7}]`, `[{"eventId":"\u0000","subscriptionId":7}]`,
		`{"eventId":1,"subscriptionId":7}`, `[{"eventId":12345678901234567890123,"subscriptionId":7}] junk`,
	} {
		f.Add([]byte(s))
	}
	hk, err := newHook(config.Service{Webhook: &config.Webhook{Scheme: "hubspot", Secrets: []string{"k"},
		EventID: `select(.eventId != null and .subscriptionId != null) | "\(.subscriptionId)-\(.eventId)"`, EventType: ".subscriptionType"}})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, body []byte) {
		events, _, err := hk.split("hubspot", verify.Event{}, body)
		if err != nil {
			require.NotEmpty(t, err.Error())
			require.Nil(t, events)
			return
		}
		require.NotEmpty(t, events)
		for i, ev := range events {
			require.NotEmpty(t, ev.ID)
			require.Empty(t, textProblem(ev.ID))
			require.Empty(t, textProblem(ev.Type))
			require.LessOrEqual(t, len(ev.ID), maxStoredID+len(hashMark)+64)
			if i > 0 {
				require.LessOrEqual(t, events[i-1].ID, ev.ID)
			}
		}
	})
}
