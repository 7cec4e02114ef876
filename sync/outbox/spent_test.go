package outbox

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/fakes/faults"
	"github.com/syncdesk/syncdesk/sync/fakes/stripe"
)

// failFirstCreate makes the first customer create meet fault inside
// Stripe, where its 500 is saved under its idempotency key.
func failFirstCreate(fault stripe.Fault) func(*http.Request) stripe.Fault {
	var n atomic.Int32
	return func(r *http.Request) stripe.Fault {
		if r.URL.Path == "/v1/customers" && n.Add(1) == 1 {
			return fault
		}
		return stripe.NoFault
	}
}

// Stripe saves a 500 under the request's Idempotency-Key and replays it to
// every retry with that key for 24 hours: sent again with it, a create
// that met one fails until its attempts run out. The next attempt looks
// the key up instead, once Stripe's search has had its minute, and adopts
// what the failed create made, or creates under the next key.
func TestStripeCreateAfterASaved500DoesNotResendItsKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault stripe.Fault
		key   string // the link's key at the end
	}{
		{"nothing made", stripe.FailBefore, "customer-1-create-g2"},
		{"made all the same", stripe.FailAfterCommit, "customer-1-create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				clk := clock.NewFake(epoch)
				fake := stripe.New(stripe.Options{Now: clk.Now, Fault: failFirstCreate(tc.fault)})
				w := newPresetWorld(t, db, "stripe", stripeYAML, fake, clk, faults.Options{})
				_, err := w.eng.Upsert(context.Background(), "customer", "1", []byte(customer(1)))
				require.NoError(t, err)
				settle(t, db, w.eng, clk, 10*time.Second, 60)

				l := w.link("customer", "1")
				require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
				require.Equal(t, 1, fake.CountByMetadata(stripe.Customer, "syncdesk_key", l.ExternalKey), "one customer")
				require.Equal(t, tc.key, l.IdempotencyKey)
				require.Zero(t, fake.Replays(), "the saved 500 was never asked for again")

				as, err := models.LinkAttempts(db, l.ID)
				require.NoError(t, err)
				require.Equal(t, http.StatusInternalServerError, as[0].HTTPCode)
				require.Equal(t, "customer.lookup", as[1].Operation)
				require.GreaterOrEqual(t, as[1].CreatedAt.Sub(as[0].CreatedAt), stripe.DefaultSearchLag,
					"the search waits until it shows what the failed create may have made")
				require.Len(t, as, map[stripe.Fault]int{stripe.FailBefore: 3, stripe.FailAfterCommit: 2}[tc.fault])
			})
		})
	}
}

// The search after a saved 500 meets a 503 of its own, or no answer: the
// link's last code is now the search's, and the key is still spent. The
// next attempt searches again; it does not send the create with the spent
// key, which would only get the saved 500 again.
func TestStripeSearchFailingAfterASaved500StillDoesNotResendTheKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault faults.Kind
	}{{"the search answered 503", faults.Error5xx}, {"the search got no answer", faults.Hang}} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				clk := clock.NewFake(epoch)
				fake := stripe.New(stripe.Options{Now: clk.Now, Fault: failFirstCreate(stripe.FailBefore)})
				w := newPresetWorld(t, db, "stripe", stripeYAML, fake, clk, faults.Options{Reads: true, HangFor: time.Second})
				// The create passes the injector and meets Stripe's 500; the
				// search after it meets the fault.
				w.faults.Script(faults.None, tc.fault)
				_, err := w.eng.Upsert(context.Background(), "customer", "1", []byte(customer(1)))
				require.NoError(t, err)
				settle(t, db, w.eng, clk, 10*time.Second, 60)

				l := w.link("customer", "1")
				require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
				require.Equal(t, 1, fake.CountByMetadata(stripe.Customer, "syncdesk_key", l.ExternalKey), "one customer")
				require.Equal(t, "customer-1-create-g2", l.IdempotencyKey)
				require.Zero(t, fake.Replays(), "the saved 500 was never asked for again")
				as, err := models.LinkAttempts(db, l.ID)
				require.NoError(t, err)
				ops := make([]string, len(as))
				for i, a := range as {
					ops[i] = a.Operation
				}
				require.Equal(t, []string{"customer.create", "customer.lookup", "customer.lookup", "customer.create"}, ops)
				requireSearchesOnlyAfterA5xx(t, db)
			})
		})
	}
}

// A record deleted after its create met a saved 500: the delete does not
// send the create again with the spent key (which would only replay the
// 500) but searches, once search has had its minute, and deletes the
// customer the failed create made after all.
func TestStripeDeleteAfterASaved500LeavesNoCustomer(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clk := clock.NewFake(epoch)
		fake := stripe.New(stripe.Options{Now: clk.Now, Fault: failFirstCreate(stripe.FailAfterCommit)})
		w := newPresetWorld(t, db, "stripe", stripeYAML, fake, clk, faults.Options{})
		_, err := w.eng.Upsert(ctx, "customer", "1", []byte(customer(1)))
		require.NoError(t, err)
		require.NoError(t, w.eng.Drain(ctx))
		require.Equal(t, http.StatusInternalServerError, w.link("customer", "1").LastHTTPCode)
		_, err = w.eng.Delete(ctx, "customer", "1")
		require.NoError(t, err)
		settle(t, db, w.eng, clk, 10*time.Second, 60)

		l := w.link("customer", "1")
		require.Equal(t, models.StatusDeleted, l.Status, l.LastError)
		require.Zero(t, fake.CountByMetadata(stripe.Customer, "syncdesk_key", l.ExternalKey), "no customer is left behind")
		require.Zero(t, fake.Replays())
		require.Equal(t, 1, fake.Requests()["DELETE /v1/customers/{id}"])
	})
}
