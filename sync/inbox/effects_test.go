package inbox

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// Providers do not promise delivery order, and a delivery that got a 5xx is
// re-sent later: a refund may arrive before the payment it refunds. An
// event moves the payment forward, to its own state, whatever steps it
// skips; one at or behind the current state is old news.
func TestPaymentEventsArriveInAnyOrder(t *testing.T) {
	type step struct{ event, outcome, status, note string }
	cases := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{
			{"payment.succeeded", models.EventApplied, "paid", "went from pending to paid"},
			{"payment.refunded", models.EventApplied, "refunded", "went from paid to refunded"},
		}},
		{"the refund first", []step{
			{"payment.refunded", models.EventApplied, "refunded", "went from pending to refunded"},
			{"payment.succeeded", models.EventIgnored, "refunded", `is already "refunded", which comes after "paid"`},
		}},
		{"the same news twice", []step{
			{"payment.succeeded", models.EventApplied, "paid", ""},
			{"payment.succeeded", models.EventIgnored, "paid", `is already "paid"`},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				e := setup(t, db)
				e.payment("1")
				for i, s := range c.steps {
					res, err := e.deliver("payments", paymentEvent("evt_"+string(rune('a'+i)), s.event, "1"))
					require.NoError(t, err)
					require.Equal(t, s.outcome, res.Outcome, "%s: %s", s.event, res.Note)
					require.Contains(t, res.Note, s.note)
					require.Equal(t, s.status, e.status("1"), "after %s", s.event)
				}
				l, err := models.LinkByExternal(db, "payments", "pay_1", "")
				require.NoError(t, err)
				rec, err := models.RecordByKey(db, "order", "1")
				require.NoError(t, err)
				require.Equal(t, rec.ContentHash, l.PushedHash, "the provider holds the state it reported: nothing to push back")
			})
		})
	}
}

// A payment in a state the transitions do not rank cannot be placed before
// or after the event's: an operator looks, rather than a silent "ignored".
func TestPaymentInAnUnknownStateIsShownToAnOperator(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.payment("1")
		payload, hash, err := models.CanonicalPayload([]byte(`{"amount":1000,"currency":"EUR","status":"disputed"}`))
		require.NoError(t, err)
		require.NoError(t, db.Model(&models.Record{}).Where("local_id = ?", "1").
			Updates(map[string]any{"payload": payload, "content_hash": hash}).Error)
		res, err := e.deliver("payments", paymentEvent("evt_a", "payment.refunded", "1"))
		require.NoError(t, err)
		require.Equal(t, models.EventFailed, res.Outcome)
		require.Contains(t, res.Note, `"disputed"`)
		require.Equal(t, "disputed", e.status("1"))
	})
}
