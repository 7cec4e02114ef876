package sandbox

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/clock"
)

func payment(key string, amount int) map[string]any {
	return map[string]any{"amount": amount, "currency": "EUR", "external_key": key}
}

func TestPaymentsReplayTheFirstAnswer(t *testing.T) {
	b := setup(t, NewPayments, Options{})
	first := b.send(t, "POST", "/payments", payment("site_order_1", 1200), "Idempotency-Key", "order-1-pay")
	require.Equal(t, http.StatusCreated, first.status, "%s", first.raw)
	require.Equal(t, "pay_1", first.body["id"])

	// Same body, re-serialised differently: still the same request.
	again := b.send(t, "POST", "/payments", `{ "external_key":"site_order_1", "currency":"EUR", "amount":1.2e3 }`, "Idempotency-Key", "order-1-pay")
	require.Equal(t, first.status, again.status)
	require.Equal(t, first.raw, again.raw, "the replay is byte for byte the first answer")
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	// A later change to the object does not change what is replayed.
	require.True(t, b.p.SetField("pay_1", "status", "refunded"))
	require.Equal(t, first.raw, b.send(t, "POST", "/payments", payment("site_order_1", 1200), "Idempotency-Key", "order-1-pay").raw)

	other := b.send(t, "POST", "/payments", payment("site_order_1", 1300), "Idempotency-Key", "order-1-pay")
	require.Equal(t, http.StatusUnprocessableEntity, other.status)
	require.Equal(t, "idempotency key reused with a different request body", other.body["error"])

	require.Equal(t, 1, b.p.CountByKey("site_order_1"))
	require.Equal(t, 2, b.p.Requests().Replays)

	// Without a key every POST creates.
	for range 2 {
		require.Equal(t, http.StatusCreated, b.send(t, "POST", "/payments", payment("site_order_2", 5)).status)
	}
	require.Equal(t, 2, b.p.CountByKey("site_order_2"))
}

// Two requests with one key at once: whichever arrives second is told the
// first is still running, and only one payment exists.
func TestPaymentsRefuseAKeyInFlight(t *testing.T) {
	b := setup(t, NewPayments, Options{Latency: 300 * time.Millisecond})
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			r := b.send(t, "POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "order-1-pay")
			statuses[i] = r.status
			if r.status == http.StatusConflict {
				require.Equal(t, "a request with this idempotency key is in progress", r.body["error"])
			}
		})
	}
	wg.Wait()
	require.ElementsMatch(t, []int{http.StatusCreated, http.StatusConflict}, statuses)
	require.Equal(t, 1, b.p.CountByKey("site_order_1"))
	require.Equal(t, http.StatusCreated, b.send(t, "POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "order-1-pay").status)
	require.Equal(t, 1, b.p.CountByKey("site_order_1"))
}

// A hung request holds its key (409 to a retry) until its client gives up;
// then the key is free and nothing was committed.
func TestPaymentsHungRequestHoldsItsKey(t *testing.T) {
	b := setup(t, NewPayments, Options{})
	b.p.Script(Hang())
	done := make(chan error)
	go func() {
		slow := &bundle{p: b.p, srv: b.srv, client: &http.Client{Timeout: 300 * time.Millisecond}}
		_, err := slow.try("POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "k")
		done <- err
	}()
	require.Eventually(t, func() bool { return b.p.Requests().Faults[FaultHang] == 1 }, 2*time.Second, 5*time.Millisecond)
	require.Equal(t, http.StatusConflict, b.send(t, "POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "k").status)
	require.Error(t, <-done)
	require.Eventually(t, func() bool {
		return b.send(t, "POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "k").status == http.StatusCreated
	}, 2*time.Second, 10*time.Millisecond, "the key is released once the hung request ends")
	require.Equal(t, 1, b.p.CountByKey("site_order_1"))
}

// Faults that commit nothing leave no answer behind for the key; a lost
// response does, so its retry is a replay, not a second payment.
func TestPaymentsKeyAfterFaults(t *testing.T) {
	b := setup(t, NewPayments, Options{})
	b.p.Script(Error5xx(503), TooMany(0), ValidationError("card declined"), DropAfterCommit())
	for _, want := range []int{503, 429, 422} {
		require.Equal(t, want, b.send(t, "POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "k").status)
	}
	require.Equal(t, 0, b.p.CountByKey("site_order_1"))

	b.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // see TestNetHTTPRetriesKeyedPostOnReusedConnection
	_, err := b.try("POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "k")
	require.Error(t, err, "the response is lost")
	retry := b.send(t, "POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "k")
	require.Equal(t, http.StatusCreated, retry.status)
	require.Equal(t, "true", retry.header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, b.p.CountByKey("site_order_1"))
}

// Go's http.Transport itself resends a request carrying Idempotency-Key when
// a reused keep-alive connection dies before the answer: the caller then sees
// the replay, never the lost response. Worth knowing when reading attempt logs.
func TestNetHTTPRetriesKeyedPostOnReusedConnection(t *testing.T) {
	b := setup(t, NewPayments, Options{})
	b.send(t, "GET", "/payments", nil) // leaves an idle connection to reuse
	b.p.Script(DropAfterCommit())
	r := b.send(t, "POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "k")
	require.Equal(t, http.StatusCreated, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, b.p.CountByKey("site_order_1"))
}

func TestPaymentsKeyExpiresAfter24Hours(t *testing.T) {
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	b := setup(t, NewPayments, Options{Now: clk.Now})
	post := func() reply {
		return b.send(t, "POST", "/payments", payment("site_order_1", 100), "Idempotency-Key", "k")
	}
	first := post()
	clk.Advance(23*time.Hour + 59*time.Minute)
	require.Equal(t, first.raw, post().raw, "still within the window")
	clk.Advance(time.Minute)
	second := post()
	require.Equal(t, http.StatusCreated, second.status)
	require.Equal(t, "pay_2", second.body["id"], "an expired key is a new request")
	require.Empty(t, second.header.Get("Idempotent-Replayed"))
	require.Equal(t, 2, b.p.CountByKey("site_order_1"))
}
