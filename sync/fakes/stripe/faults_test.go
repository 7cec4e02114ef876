package stripe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/fakes/faults"
)

// A create whose answer is lost after Stripe committed it, retried with
// the same key, is replayed, not made twice; one refused with a 5xx or a
// 429 before anything was committed is simply run by the retry.
func TestBehindFaultsTheKeyKeepsOneObject(t *testing.T) {
	fake := New(Options{SearchLag: -1})
	in := faults.New(faults.Options{})
	srv := httptest.NewServer(in.Wrap(fake))
	t.Cleanup(srv.Close)
	c := &client{t: t, base: srv.URL, key: testKey}
	body := form("amount", "1500", "currency", "usd", "metadata[syncdesk_key]", "pay-77")

	post := func() (*http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/payment_intents", strings.NewReader(body.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Idempotency-Key", "pay-77-create")
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		return res, err
	}

	in.Script(faults.Error5xx, faults.TooMany, faults.Lost)
	res, err := post()
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	res, err = post()
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Zero(t, fake.Creates(PaymentIntent), "neither fault let the request through")
	_, err = post()
	require.Error(t, err, "the answer was lost")
	require.Equal(t, 1, fake.Creates(PaymentIntent), "after the work was done")

	a := c.do(http.MethodPost, "/v1/payment_intents", body, "Idempotency-Key", "pay-77-create")
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "true", a.header.Get("Idempotent-Replayed"), "the retry gets the lost answer")
	require.Equal(t, 1, fake.Creates(PaymentIntent))
	require.Equal(t, 1, fake.CountByMetadata(PaymentIntent, "syncdesk_key", "pay-77"))
}
