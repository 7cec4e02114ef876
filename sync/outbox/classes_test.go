package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/sandbox"
)

func TestErrorClasses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		t.Run("422 fails after exactly one attempt with the provider's words", func(t *testing.T) {
			e := setup(t, db)
			e.upsert("payment", "422", `{"amount":-5,"currency":"EUR"}`)
			e.settle(e.eng)
			l := e.link("payment", "422", "payments")
			require.Equal(t, models.StatusFailed, l.Status)
			require.Len(t, e.attempts(l.ID), 1)
			require.Equal(t, 422, l.LastHTTPCode)
			require.Contains(t, l.LastError, "HTTP 422: ")
			require.Contains(t, l.LastError, "amount")
		})
		t.Run("503 forever makes exactly max_attempts attempts, then fails", func(t *testing.T) {
			e := setup(t, db)
			e.pay.SetOptions(sandbox.Options{Rate5xx: 1})
			e.upsert(payment(503))
			e.settle(e.eng)
			l := e.link("payment", "503", "payments")
			require.Equal(t, models.StatusFailed, l.Status)
			require.Len(t, e.attempts(l.ID), 6)
			require.Contains(t, l.LastError, "gave up after 6 attempts")
			require.Zero(t, e.pay.CountByKey("site_payment_503"))
		})
		t.Run("a last attempt that looks up and finds nothing fails with the failure before it", func(t *testing.T) {
			e := setup(t, db)
			e.upsert(order(1))
			require.NoError(t, db.Model(&models.Link{}).Where("local_id = ?", "1").Updates(map[string]any{
				"status": models.StatusRetry, "attempts": 5, "needs_lookup": true,
				"last_error": "HTTP 429: slow down", "last_http_code": 429}).Error)
			e.settle(e.eng)
			l := e.link("order", "1", "crm")
			require.Equal(t, models.StatusFailed, l.Status)
			require.Equal(t, "gave up after 6 attempts (the last one a lookup that found nothing); the failure before it: HTTP 429: slow down", l.LastError)
			require.Equal(t, 429, l.LastHTTPCode)
			require.True(t, strings.HasPrefix(l.ErrorGroup, "crm · HTTP 429 · "), "grouped by what went wrong, not as 'no answer': %s", l.ErrorGroup)
			require.Zero(t, e.crm.CountByKey("site_order_1"), "no create past max attempts")
		})
		t.Run("429 with Retry-After: 7 waits at least 7 s", func(t *testing.T) {
			e := setup(t, db)
			e.crm.Script(sandbox.TooMany(7 * time.Second))
			e.upsert(order(429))
			require.NoError(t, e.eng.Drain(context.Background()))
			l := e.link("order", "429", "crm")
			require.Equal(t, models.StatusRetry, l.Status)
			require.Equal(t, e.clock.Now().Add(7*time.Second), l.NextAttemptAt.UTC())
			require.False(t, l.NeedsLookup, "a 429 did not create anything")

			e.clock.Advance(6 * time.Second)
			require.NoError(t, e.eng.Drain(context.Background()))
			require.Equal(t, models.StatusRetry, e.link("order", "429", "crm").Status, "not before +7 s")
			e.clock.Advance(time.Second)
			require.NoError(t, e.eng.Drain(context.Background()))
			require.Equal(t, models.StatusSuccess, e.link("order", "429", "crm").Status)
		})
	})
}

// poisonConn fails one key forever and panics on another; the rest pass through.
type poisonConn struct {
	Connector
	panics atomic.Int32
}

func (c *poisonConn) Create(ctx context.Context, rec connector.Record, key string) connector.Call {
	switch {
	case key == "order-poison-create":
		return connector.Call{Operation: "deal.create", Class: connector.Temporary, HTTPCode: 503, Error: "HTTP 503: down for this one"}
	case key == "order-panic-create":
		c.panics.Add(1)
		panic("connector bug; request had Authorization: Bearer sk_live_4eC39HqLyjWDarjtT1zdp7dc")
	}
	return c.Connector.Create(ctx, rec, key)
}

func TestPoisonRecordsDoNotStopTheQueue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		pc := &poisonConn{Connector: e.svcs[0].Conn}
		e.svcs[0].Conn = pc
		e.svcs[0].Config.LookupBeforeCreate = false
		eng := e.engine(db, Options{Concurrency: 8})
		for i := range 100 {
			_, err := eng.Upsert(context.Background(), "order", fmt.Sprint(i), []byte(fmt.Sprintf(`{"title":"Order %d"}`, i)))
			require.NoError(t, err)
		}
		for _, id := range []string{"poison", "panic"} {
			_, err := eng.Upsert(context.Background(), "order", id, []byte(`{"title":"Bad"}`))
			require.NoError(t, err)
		}
		e.settle(eng)

		var ok int64
		db.Model(&models.Link{}).Where("status = ?", models.StatusSuccess).Count(&ok)
		require.EqualValues(t, 100, ok)
		for _, id := range []string{"poison", "panic"} {
			l := e.link("order", id, "crm")
			require.Equal(t, models.StatusFailed, l.Status)
			require.Len(t, e.attempts(l.ID), 6, id)
		}
		panicked := e.link("order", "panic", "crm")
		require.Contains(t, panicked.LastError, "the connector crashed: connector bug")
		require.NotContains(t, panicked.LastError, "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "a panic's words are redacted")
		for _, a := range e.attempts(panicked.ID) {
			require.NotContains(t, a.Error, "sk_live_4eC39HqLyjWDarjtT1zdp7dc")
		}
		require.EqualValues(t, 6, pc.panics.Load(), "each panic failed one attempt, not the worker")
	})
}

// The rescuer reads an expired lease, then the worker finishes the link, then
// the rescuer's release runs: it must change nothing.
func TestRescueRaceLeavesAFinishedLinkAlone(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.upsert(order(1))
		claimed, err := models.ClaimDue(db, "slow-worker/1", e.clock.Now(), time.Minute, 10, nil)
		require.NoError(t, err)
		require.Len(t, claimed, 1)

		e.clock.Advance(2 * time.Minute)
		expired, err := models.ExpiredLeases(db, e.clock.Now(), 10)
		require.NoError(t, err)
		require.Len(t, expired, 1)

		out := e.eng.send(context.Background(), job{link: claimed[0].Link, payload: `{"title":"Order 1","total":"11.00"}`,
			hash: models.HashPayload(`{"title":"Order 1","total":"11.00"}`)})
		stale, err := models.FinishLinks(db, []models.LinkOutcome{out}, e.clock.Now())
		require.NoError(t, err)
		require.Zero(t, stale)

		n, err := e.eng.release(context.Background(), expired)
		require.NoError(t, err)
		require.Zero(t, n, "the rescuer must change 0 rows")
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status)
		for _, a := range e.attempts(l.ID) {
			require.NotEqual(t, "lease.expired", a.Operation)
		}
	})
}

// payloadChanger changes the record while its create is in flight.
type payloadChanger struct {
	Connector
	change func()
}

func (c payloadChanger) Create(ctx context.Context, rec connector.Record, key string) connector.Call {
	call := c.Connector.Create(ctx, rec, key)
	c.change()
	return call
}

func TestPayloadChangedWhileSendingIsPushedAgain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		var eng *Engine
		e.svcs[0].Conn = payloadChanger{Connector: e.svcs[0].Conn, change: func() {
			_, err := eng.Upsert(context.Background(), "order", "1", []byte(`{"title":"Order 1","total":"50.00"}`))
			require.NoError(t, err)
		}}
		eng = e.engine(db, Options{Concurrency: 1})
		_, err := eng.Upsert(context.Background(), "order", "1", []byte(`{"title":"Order 1","total":"11.00"}`))
		require.NoError(t, err)
		require.NoError(t, eng.Drain(context.Background()))

		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status)
		require.Equal(t, "50.00", e.crm.Objects()[0]["total"], "the change made during the create was pushed after it")
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"))
		rec, _ := models.RecordByKey(db, "order", "1")
		require.Equal(t, rec.ContentHash, l.PushedHash)
	})
}

// A create the provider refuses for its data fails the link, unless the
// data was fixed while the create was out: then the fixed record is sent
// as soon as the send ends, without a person's retry.
func TestDataFixedWhileARefusedCreateWasOutIsSentAgain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		var eng *Engine
		fixed := false
		e.svcs[0].Conn = payloadChanger{Connector: e.svcs[0].Conn, change: func() {
			if fixed {
				return
			}
			fixed = true
			_, err := eng.Upsert(context.Background(), "order", "1", []byte(`{"title":"Order 1","total":"11.00"}`))
			require.NoError(t, err)
		}}
		eng = e.engine(db, Options{Concurrency: 1})
		_, err := eng.Upsert(context.Background(), "order", "1", []byte(`{"total":"11.00"}`))
		require.NoError(t, err)
		require.NoError(t, eng.Drain(context.Background()))

		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status, "the fixed record was sent: %s", l.LastError)
		require.Equal(t, "Order 1", e.crm.Objects()[0]["title"])
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"))
		calls := e.attempts(l.ID)
		require.Len(t, calls, 2)
		require.Equal(t, 422, calls[0].HTTPCode, "the first create was refused")
		require.Equal(t, models.OutcomePermanent, calls[0].Outcome)
	})
}

// A create the provider refused is sent again once the record's data is
// fixed at the source, as the link page says: with the record as it now
// is, not the body frozen at the refused attempt, and under the next
// idempotency key (a provider that saved its refusal under the first key
// would refuse a new body sent under it).
func TestARefusedCreateIsSentAgainOnceItsDataIsFixed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.upsert("order", "1", `{"total":"11.00"}`)
		e.settle(e.eng)
		l := e.link("order", "1", "crm")
		require.Equal(t, models.StatusFailed, l.Status)
		require.Equal(t, "HTTP 422: title is required", l.LastError)

		e.upsert("order", "1", `{"title":"Order 1","total":"11.00"}`)
		e.settle(e.eng)
		l = e.link("order", "1", "crm")
		require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
		require.Equal(t, 1, e.crm.CountByKey("site_order_1"))
		require.Equal(t, "Order 1", e.crm.Objects()[0]["title"])
		require.Empty(t, l.CreatePayload, "a success keeps no frozen body")
		calls := e.attempts(l.ID)
		require.Len(t, calls, 2)
		require.Equal(t, []string{"order-1-create", "order-1-create-g2"}, []string{calls[0].IdempotencyKey, calls[1].IdempotencyKey})
		require.Equal(t, []int{422, 201}, []int{calls[0].HTTPCode, calls[1].HTTPCode})
	})
}

// A create whose answer was lost may have made an object holding its body:
// its later attempts keep that body and key, whatever the record becomes
// meanwhile, so that the provider replays the first answer or the lookup
// adopts that object; the record's new state then goes as an update.
func TestACreateThatMayHaveReachedTheProviderKeepsItsBodyAndKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, tc := range []struct {
			name, service, typ, key, field, changed string
			provider                                func(*env) *sandbox.Provider
		}{
			{"lookup, adopt", "crm", "order", "site_order_1", "total", `{"title":"Order 1","total":"50.00"}`,
				func(e *env) *sandbox.Provider { return e.crm }},
			{"same key, replayed answer", "payments", "payment", "site_payment_1", "amount", `{"amount":500,"currency":"EUR"}`,
				func(e *env) *sandbox.Provider { return e.pay }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := setup(t, db)
				p := tc.provider(e)
				p.Script(sandbox.DropAfterCommit())
				for i := range e.svcs {
					if e.svcs[i].Name == tc.service {
						e.svcs[i].Conn = payloadChanger{Connector: e.svcs[i].Conn, change: func() {
							_, err := e.eng.Upsert(context.Background(), tc.typ, "1", []byte(tc.changed))
							require.NoError(t, err)
						}}
					}
				}
				eng := e.engine(db, Options{Concurrency: 1})
				_, _, first := map[string]func(int) (string, string, string){"order": order, "payment": payment}[tc.typ](1)
				_, err := eng.Upsert(context.Background(), tc.typ, "1", []byte(first))
				require.NoError(t, err)
				e.settle(eng)

				l := e.link(tc.typ, "1", tc.service)
				require.Equal(t, models.StatusSuccess, l.Status, l.LastError)
				require.Equal(t, 1, p.CountByKey(tc.key), "exactly one remote object")
				var want map[string]any
				require.NoError(t, json.Unmarshal([]byte(tc.changed), &want))
				require.EqualValues(t, want[tc.field], p.Objects()[0][tc.field], "the record's new state was pushed after")
				creates := 0
				for _, a := range e.attempts(l.ID) {
					if strings.HasSuffix(a.Operation, ".create") {
						creates++
						require.Equal(t, tc.typ+"-1-create", a.IdempotencyKey, "every create attempt under the first key")
					}
				}
				require.GreaterOrEqual(t, creates, 1)
			})
		}
	})
}
