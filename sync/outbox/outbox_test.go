package outbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

func TestUpsertIsIdempotentAndQueuesOnlyChanges(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		typ, id, body := order(1)
		res := e.upsert(typ, id, body)
		require.True(t, res.Changed)
		require.Len(t, res.Links, 1)
		require.Equal(t, "site_order_1", res.Links[0].ExternalKey)
		require.Equal(t, "order-1-create", res.Links[0].IdempotencyKey)
		e.settle(e.eng)
		require.Equal(t, models.StatusSuccess, e.link(typ, id, "crm").Status)

		// Same content, other key order and spacing: nothing changes, nothing is queued.
		res = e.upsert(typ, id, `{ "total":"11.00", "title":"Order 1" }`)
		require.False(t, res.Changed)
		require.Equal(t, models.StatusSuccess, res.Links[0].Status)

		res = e.upsert(typ, id, `{"title":"Order 1","total":"99.00"}`)
		require.True(t, res.Changed)
		require.Equal(t, models.StatusNew, res.Links[0].Status)
		e.settle(e.eng)
		l := e.link(typ, id, "crm")
		require.Equal(t, models.StatusSuccess, l.Status)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"), "an update, never a second object")
		require.Equal(t, "99.00", e.crm.Objects()[0]["total"], "the desired state was pushed")
		ops := []string{}
		for _, a := range e.attempts(l.ID) {
			ops = append(ops, a.Operation)
		}
		require.Equal(t, []string{"deal.create", "deal.update"}, ops)

		_, err := e.eng.Upsert(context.Background(), "order", "2", []byte(`[1,2]`))
		var inv *models.InvalidError
		require.ErrorAs(t, err, &inv)
		_, err = e.eng.Upsert(context.Background(), "order", "a/b", []byte(`{}`))
		require.ErrorAs(t, err, &inv)
	})
}

// The provider commits the create and drops the connection: the classic lost
// response. Exactly one remote object, the link a success with its id, at
// least two attempts, and every create attempt carrying the same key.
func TestLostResponse(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, tc := range []struct {
			name, service, key string
			mk                 func(int) (string, string, string)
			provider           func(*env) *sandbox.Provider
		}{
			{"without idempotency support (lookup, adopt)", "crm", "site_order_7", order, func(e *env) *sandbox.Provider { return e.crm }},
			{"with idempotency support (same key, replayed answer)", "payments", "site_payment_7", payment, func(e *env) *sandbox.Provider { return e.pay }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := setup(t, db)
				p := tc.provider(e)
				p.Script(sandbox.DropAfterCommit())
				typ, id, body := tc.mk(7)
				e.upsert(typ, id, body)
				e.settle(e.eng)

				require.Equal(t, 1, p.CountByKey(tc.key), "exactly one remote object")
				l := e.link(typ, id, tc.service)
				require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
				require.NotEmpty(t, l.ExternalID)
				require.Equal(t, p.Objects()[0]["id"], l.ExternalID)
				as := e.attempts(l.ID)
				require.GreaterOrEqual(t, len(as), 2)
				require.Equal(t, models.OutcomeAmbiguous, as[0].Outcome)
				for _, a := range as {
					if a.Operation == "deal.create" || a.Operation == "payment.create" {
						require.Equal(t, "order-7-create"[:0]+typ+"-7-create", a.IdempotencyKey)
					}
				}
			})
		}
	})
}

// crashingConn is a connector whose worker "dies" right after the provider
// committed: it closes the worker's database, so nothing the worker does
// afterwards reaches it — like a process killed mid-send.
type crashingConn struct {
	Connector
	die func()
}

func (c crashingConn) Create(ctx context.Context, rec connector.Record, key string) connector.Call {
	call := c.Connector.Create(ctx, rec, key)
	c.die()
	return connector.Call{Operation: call.Operation, Class: connector.Temporary, Ambiguous: true, Error: "worker died"}
}

func TestCrashMidSendIsRescuedAndAdopted(t *testing.T) {
	for _, dialect := range []string{models.SQLite, models.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := dbtest.SQLitePath(t)
			if dialect == models.Postgres {
				url = dbtest.PostgresURL(t)
			}
			e := setup(t, dbtest.Open(t, url))
			doomedDB := dbtest.Open(t, url)
			sqlDB, _ := doomedDB.DB()
			svcs := append([]Service(nil), e.svcs...)
			for i := range svcs {
				svcs[i].Conn = crashingConn{Connector: svcs[i].Conn, die: func() { sqlDB.Close() }}
			}
			doomed := New(doomedDB, svcs, e.clock, e.eng.log, Options{Concurrency: 2, WorkerID: "doomed"})

			for _, mk := range []func(int) (string, string, string){order, payment} {
				typ, id, body := mk(3)
				e.upsert(typ, id, body)
			}
			require.Error(t, doomed.Drain(context.Background()), "the dead worker cannot write its outcome")
			var processing int64
			e.db.Model(&models.Link{}).Where("status = ?", models.StatusProcessing).Count(&processing)
			require.EqualValues(t, 2, processing, "both links are stuck under the dead worker's lease")

			n, err := e.eng.Rescue(context.Background())
			require.NoError(t, err)
			require.Zero(t, n, "a lease that has not expired is left alone")
			e.clock.Advance(e.eng.opts.Lease + time.Second)
			n, err = e.eng.Rescue(context.Background())
			require.NoError(t, err)
			require.Equal(t, 2, n)
			e.settle(e.eng)

			require.Equal(t, 1, e.crm.CountByKey("site_order_3"))
			require.Equal(t, 1, e.pay.CountByKey("site_payment_3"))
			for _, l := range []models.Link{e.link("order", "3", "crm"), e.link("payment", "3", "payments")} {
				require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
				as := e.attempts(l.ID)
				require.Equal(t, "lease.expired", as[0].Operation)
				require.Equal(t, models.OutcomeAmbiguous, as[0].Outcome)
			}
			ops := []string{}
			for _, a := range e.attempts(e.link("order", "3", "crm").ID) {
				ops = append(ops, a.Operation)
			}
			require.Equal(t, []string{"lease.expired", "deal.lookup"}, ops, "the CRM object is looked up and adopted, not re-created")
		})
	}
}

func TestSyncNowIsDebounced(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		typ, id, body := order(5)
		e.upsert(typ, id, body)
		e.settle(e.eng)
		sendsBefore := e.crm.Requests().Total
		l := e.link(typ, id, "crm")

		var wg sync.WaitGroup
		var mu sync.Mutex
		var started, busy, other int
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.eng.SyncNow(context.Background(), l.ID, []string{"ana", "bo"}[i%2])
				var ip *models.InProgressError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					started++
				case errors.As(err, &ip):
					busy++
					require.Contains(t, ip.Error(), "already in progress since")
				default:
					other++
					t.Errorf("unexpected error: %v", err)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 1, started)
		require.Equal(t, 49, busy)
		require.Zero(t, other)
		var rows int64
		db.Model(&models.InProgress{}).Count(&rows)
		require.EqualValues(t, 1, rows)

		e.settle(e.eng)
		require.Equal(t, sendsBefore+1, e.crm.Requests().Total, "one send")
		db.Model(&models.InProgress{}).Count(&rows)
		require.Zero(t, rows, "the row is released when the sync ends")
		_, err := e.eng.SyncNow(context.Background(), l.ID, "ana")
		require.NoError(t, err, "a new request after the end is accepted")
	})
}
