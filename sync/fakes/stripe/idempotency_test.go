package stripe

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSameKeyAndParametersReplayTheFirstAnswer(t *testing.T) {
	s, c, _ := setup(t, Options{})
	body := form("email", "jenny@example.com", "metadata[syncdesk_key]", "cust-1")

	first := c.do(http.MethodPost, "/v1/customers", body, "Idempotency-Key", "cust-1-create")
	require.Equal(t, http.StatusOK, first.status)
	require.Empty(t, first.header.Get("Idempotent-Replayed"))
	again := c.do(http.MethodPost, "/v1/customers", body, "Idempotency-Key", "cust-1-create")
	require.Equal(t, http.StatusOK, again.status)
	require.Equal(t, string(first.raw), string(again.raw), "the very same body")
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.header.Get("Request-Id"), again.header.Get("Original-Request"))
	require.Equal(t, 1, s.Creates(Customer))
	require.Equal(t, 1, s.Replays())

	// An answer the endpoint gave, error or not, is saved: a 404 replays.
	miss := c.do(http.MethodPost, "/v1/customers/cus_nobody", form("name", "x"), "Idempotency-Key", "upd-1")
	require.Equal(t, http.StatusNotFound, miss.status)
	missAgain := c.do(http.MethodPost, "/v1/customers/cus_nobody", form("name", "x"), "Idempotency-Key", "upd-1")
	require.Equal(t, http.StatusNotFound, missAgain.status)
	require.Equal(t, "true", missAgain.header.Get("Idempotent-Replayed"))

	// A request that fails validation saves nothing: the corrected retry runs.
	bad := c.do(http.MethodPost, "/v1/payment_intents", form("currency", "usd"), "Idempotency-Key", "pay-1")
	require.Equal(t, http.StatusBadRequest, bad.status)
	good := c.do(http.MethodPost, "/v1/payment_intents", form("currency", "usd", "amount", "500"), "Idempotency-Key", "pay-1")
	require.Equal(t, http.StatusOK, good.status, "%s", good.raw)
	require.Empty(t, good.header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, s.Creates(PaymentIntent))

	// GET ignores keys: "idempotent by definition".
	a := c.do(http.MethodGet, "/v1/customers", nil, "Idempotency-Key", "cust-1-create")
	require.Equal(t, http.StatusOK, a.status)
	require.Empty(t, a.header.Get("Idempotent-Replayed"))
}

func TestSameKeyWithOtherParametersIsAnIdempotencyError(t *testing.T) {
	s, c, _ := setup(t, Options{})
	c.ok(http.MethodPost, "/v1/customers", form("email", "a@example.com"), "Idempotency-Key", "k1")

	for _, tc := range []struct{ path, email string }{
		{"/v1/customers", "b@example.com"},       // other parameters
		{"/v1/payment_intents", "a@example.com"}, // another endpoint
	} {
		a := c.do(http.MethodPost, tc.path, form("email", tc.email), "Idempotency-Key", "k1")
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", tc.path, a.raw)
		require.Equal(t, "idempotency_error", a.errField("type"))
		require.Contains(t, a.errField("message"), "same parameters")
	}
	require.Equal(t, 1, s.Creates(Customer))

	other := *c
	other.key = "sk_test_another_account"
	other.ok(http.MethodPost, "/v1/customers", form("email", "b@example.com"), "Idempotency-Key", "k1")
	require.Equal(t, 2, s.Creates(Customer), "keys belong to one API key")

	long := c.do(http.MethodPost, "/v1/customers", nil, "Idempotency-Key", strings.Repeat("k", 256))
	require.Equal(t, http.StatusBadRequest, long.status, "keys are up to 255 characters")
}

func TestAKeyInFlightIsRefusedWith409(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var holds atomic.Int32
	s, c, _ := setup(t, Options{Executing: func(*http.Request) {
		if holds.Add(1) == 1 { // hold only the first request
			close(entered)
			<-release
		}
	}})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server closes, even when the test fails early
	body := form("amount", "1000", "currency", "eur", "metadata[syncdesk_key]", "pay-9")

	first := make(chan answer, 1)
	go func() { first <- c.do(http.MethodPost, "/v1/payment_intents", body, "Idempotency-Key", "pay-9-create") }()
	<-entered

	const n = 40
	var wg sync.WaitGroup
	answers := make(chan answer, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- c.do(http.MethodPost, "/v1/payment_intents", body, "Idempotency-Key", "pay-9-create")
		}()
	}
	wg.Wait()
	close(answers)
	for a := range answers {
		require.Equal(t, http.StatusConflict, a.status, "%s", a.raw)
		require.Equal(t, "idempotency_error", a.errField("type"))
		require.Equal(t, "idempotency_key_in_use", a.errField("code"))
	}
	require.Zero(t, s.Creates(PaymentIntent), "the first is still in flight")

	free()
	got := <-first
	require.Equal(t, http.StatusOK, got.status)
	retry := c.do(http.MethodPost, "/v1/payment_intents", body, "Idempotency-Key", "pay-9-create")
	require.Equal(t, string(got.raw), string(retry.raw), "a 409 saved nothing: the retry replays the first")
	require.Equal(t, 1, s.Creates(PaymentIntent))
	require.EqualValues(t, 1, holds.Load(), "the 409s never reached the endpoint")
}

func TestManyAtOnceWithOneKeyCreateOnce(t *testing.T) {
	// Each create takes a few milliseconds, as a real one does, so that
	// requests overlap while one is in flight.
	s, c, _ := setup(t, Options{Executing: func(*http.Request) { time.Sleep(3 * time.Millisecond) }})
	body := form("email", "race@example.com", "metadata[syncdesk_key]", "cust-race")
	const n = 50
	start := make(chan struct{})
	answers := make(chan answer, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers <- c.do(http.MethodPost, "/v1/customers", body, "Idempotency-Key", "cust-race-create")
		}()
	}
	close(start)
	wg.Wait()
	close(answers)
	var id string
	for a := range answers {
		if a.status == http.StatusConflict {
			continue
		}
		require.Equal(t, http.StatusOK, a.status, "%s", a.raw)
		if id == "" {
			id = a.body["id"].(string)
		}
		require.Equal(t, id, a.body["id"], "every 200 is the one customer")
	}
	require.Equal(t, 1, s.Creates(Customer))
	require.Equal(t, 1, s.CountByMetadata(Customer, "syncdesk_key", "cust-race"))
}

func TestKeysExpireAfter24Hours(t *testing.T) {
	s, c, clk := setup(t, Options{})
	body := form("amount", "700", "currency", "usd")
	first := c.do(http.MethodPost, "/v1/payment_intents", body, "Idempotency-Key", "k")

	clk.Advance(KeyLifetime - time.Second)
	a := c.do(http.MethodPost, "/v1/payment_intents", body, "Idempotency-Key", "k")
	require.Equal(t, "true", a.header.Get("Idempotent-Replayed"), "still within 24 h")
	require.Equal(t, first.body["id"], a.body["id"])
	require.Equal(t, http.StatusBadRequest, c.do(http.MethodPost, "/v1/payment_intents",
		form("amount", "701", "currency", "usd"), "Idempotency-Key", "k").status)

	clk.Advance(time.Second)
	b := c.do(http.MethodPost, "/v1/payment_intents", body, "Idempotency-Key", "k")
	require.Equal(t, http.StatusOK, b.status)
	require.Empty(t, b.header.Get("Idempotent-Replayed"), "past 24 h the key is a new request")
	require.NotEqual(t, first.body["id"], b.body["id"])
	require.Equal(t, 2, s.Creates(PaymentIntent))
}

// "Retries with the same key return the saved response, including 500
// errors" (https://docs.stripe.com/api/idempotent_requests): a server
// error met inside the idempotency layer replays to the same key, whether
// the object was made or not; another key runs anew.
func TestAServerErrorIsSavedUnderItsKeyAndReplayed(t *testing.T) {
	for _, fault := range []Fault{FailBefore, FailAfterCommit} {
		var failing atomic.Bool
		failing.Store(true)
		s, c, _ := setup(t, Options{Fault: func(*http.Request) Fault {
			if failing.Load() {
				return fault
			}
			return NoFault
		}})
		body := form("email", "jenny@example.com")
		first := c.do(http.MethodPost, "/v1/customers", body, "Idempotency-Key", "k1")
		require.Equal(t, http.StatusInternalServerError, first.status)
		require.Equal(t, "api_error", first.errField("type"))
		failing.Store(false) // Stripe is well again; the key still replays its 500
		again := c.do(http.MethodPost, "/v1/customers", body, "Idempotency-Key", "k1")
		require.Equal(t, http.StatusInternalServerError, again.status)
		require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
		made := map[Fault]int{FailBefore: 0, FailAfterCommit: 1}[fault]
		require.Equal(t, made, s.Creates(Customer))
		require.Equal(t, http.StatusOK, c.do(http.MethodPost, "/v1/customers", body, "Idempotency-Key", "k2").status)
		require.Equal(t, made+1, s.Creates(Customer))
	}
}
