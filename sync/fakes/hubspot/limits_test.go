package hubspot

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var fifty = Limit{Max: 50, Window: 10 * time.Second}

// Every answer says the window, the limit and what is left of it, which
// counts down to 0; the next request is refused with HubSpot's 429 until
// the window has passed.
func TestRemainingCountsDownThen429(t *testing.T) {
	b := setup(t, Options{Limit: fifty})
	for i := range 50 {
		a := b.call(t, http.MethodGet, "/crm/v3/objects/contacts", nil)
		require.Equal(t, http.StatusOK, a.status)
		require.Equal(t, "10000", a.header.Get(HeaderInterval))
		require.Equal(t, "50", a.header.Get(HeaderMax))
		require.Equal(t, strconv.Itoa(49-i), a.header.Get(HeaderRemaining))
		require.Equal(t, "250000", a.header.Get(HeaderDaily))
		require.Equal(t, strconv.Itoa(250000-1-i), a.header.Get(HeaderDailyRemaining))
	}
	refused := b.call(t, http.MethodPost, "/crm/v3/objects/contacts", props("email", "a@example.com"))
	require.Equal(t, http.StatusTooManyRequests, refused.status)
	require.Equal(t, "0", refused.header.Get(HeaderRemaining))
	require.Equal(t, "50", refused.header.Get(HeaderMax))
	require.Equal(t, "TEN_SECONDLY_ROLLING", refused.body["policyName"])
	require.Equal(t, "RATE_LIMIT", refused.body["errorType"])
	require.Equal(t, "RATE_LIMITS", refused.body["category"])
	require.Equal(t, "You have reached your ten_secondly_rolling limit.", refused.body["message"])
	require.Empty(t, b.fake.Objects("contacts"), "a refused create makes nothing")
	require.Equal(t, 1, b.fake.Stats().TooMany)

	b.clock.Advance(10*time.Second - time.Nanosecond)
	require.Equal(t, http.StatusTooManyRequests, b.call(t, http.MethodGet, "/crm/v3/objects/contacts", nil).status)
	b.clock.Advance(time.Nanosecond)
	again := b.call(t, http.MethodGet, "/crm/v3/objects/contacts", nil)
	require.Equal(t, http.StatusOK, again.status)
	require.Equal(t, "49", again.header.Get(HeaderRemaining))
	require.Equal(t, 2, b.fake.Stats().TooMany)
}

// burst sends n creates at once with token and returns how many were
// admitted; every other answer must be the rate limit's 429.
func burst(b *bundle, token string, n int, seq *atomic.Int64) (int, error) {
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			key := fmt.Sprintf("k-%d", seq.Add(1))
			a, err := b.send(token, http.MethodPost, "/crm/v3/objects/deals", props("syncdesk_key", key))
			switch {
			case err != nil:
				errs <- err
			case a.status == http.StatusCreated:
				admitted.Add(1)
			case a.status != http.StatusTooManyRequests || a.body["policyName"] != "TEN_SECONDLY_ROLLING":
				errs <- fmt.Errorf("%d %s", a.status, a.raw)
			}
		})
	}
	wg.Wait()
	close(errs)
	return int(admitted.Load()), <-errs // nil when none
}

// The window rolls: a request counts for ten seconds after it was admitted,
// so no ten seconds ever see more than the limit, even where a fixed window
// would reset. Each step sends its requests at once.
func TestRollingWindowHoldsUnderConcurrency(t *testing.T) {
	b := setup(t, Options{Limit: fifty})
	var seq atomic.Int64
	steps := []struct {
		at            time.Duration
		send, admit   int
		why           string
		otherTokenGot int
	}{
		{0, 1, 1, "the first request", 0},
		{9 * time.Second, 60, 49, "49 more fill the window", 0},
		{10 * time.Second, 60, 1, "only the first request has left the window (a fixed window would allow 50)", 50},
		{19*time.Second - time.Millisecond, 60, 0, "the 49 still count", 0},
		{19 * time.Second, 60, 49, "the 49 have left", 0},
		{30 * time.Second, 60, 50, "a window after all have left", 0},
	}
	var admittedAt []time.Duration
	for _, s := range steps {
		b.clock.Advance(t0.Add(s.at).Sub(b.clock.Now()))
		var other int
		var otherErr error
		var wg sync.WaitGroup
		if s.otherTokenGot > 0 {
			wg.Go(func() { other, otherErr = burst(b, "pat-na1-other", 80, &seq) })
		}
		got, err := burst(b, testToken, s.send, &seq)
		wg.Wait()
		require.NoError(t, err)
		require.NoError(t, otherErr)
		require.Equal(t, s.admit, got, "at %v: %s", s.at, s.why)
		require.Equal(t, s.otherTokenGot, other, "at %v: each token has its own window", s.at)
		for range got {
			admittedAt = append(admittedAt, s.at)
		}
	}
	for _, from := range admittedAt {
		in := 0
		for _, at := range admittedAt {
			if at >= from && at < from+10*time.Second {
				in++
			}
		}
		require.LessOrEqual(t, in, 50, "requests admitted in the 10 s from %v", from)
	}
	require.Equal(t, len(admittedAt)+50, b.fake.Stats().Creates, "every admitted create was made, no refused one")
}

// The window's length is configurable and runs on the wall clock too.
func TestShortWindowOnTheWallClock(t *testing.T) {
	b := setup(t, Options{Now: time.Now, Limit: Limit{Max: 5, Window: 2 * time.Second}})
	start := time.Now()
	for range 5 {
		require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/crm/v3/objects/companies", nil).status)
	}
	refused := b.call(t, http.MethodGet, "/crm/v3/objects/companies", nil)
	require.Less(t, time.Since(start), 2*time.Second, "the machine is too slow for this window")
	require.Equal(t, http.StatusTooManyRequests, refused.status)
	require.Equal(t, "2000", refused.header.Get(HeaderInterval))
	time.Sleep(2*time.Second - time.Since(start) + 50*time.Millisecond)
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/crm/v3/objects/companies", nil).status)
}

// Search has its own lower limit (four a second) and its answers carry no
// rate-limit headers; it does not use up the general limit.
func TestSearchHasItsOwnLimit(t *testing.T) {
	b := setup(t, Options{Limit: fifty})
	for range 4 {
		a := b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", map[string]any{})
		require.Equal(t, http.StatusOK, a.status, a.raw)
		require.Empty(t, a.header.Get(HeaderRemaining))
		require.Empty(t, a.header.Get(HeaderMax))
	}
	refused := b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", map[string]any{})
	require.Equal(t, http.StatusTooManyRequests, refused.status)
	require.Equal(t, "SECONDLY", refused.body["policyName"])
	require.Equal(t, "You have reached your secondly limit.", refused.body["message"])

	general := b.call(t, http.MethodGet, "/crm/v3/objects/contacts", nil)
	require.Equal(t, http.StatusOK, general.status)
	require.Equal(t, "49", general.header.Get(HeaderRemaining), "searches did not count against the general limit")

	b.clock.Advance(time.Second)
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/crm/v3/objects/contacts/search", map[string]any{}).status)
	require.Equal(t, 6, b.fake.Stats().Requests["POST /crm/v3/objects/contacts/search"])
}

// The daily limit is counted per UTC day and answered with policy DAILY.
func TestDailyLimit(t *testing.T) {
	b := setup(t, Options{Daily: 3})
	for i := range 3 {
		a := b.call(t, http.MethodGet, "/crm/v3/objects/deals", nil)
		require.Equal(t, http.StatusOK, a.status)
		require.Equal(t, strconv.Itoa(2-i), a.header.Get(HeaderDailyRemaining))
	}
	b.clock.Advance(time.Minute)
	refused := b.call(t, http.MethodGet, "/crm/v3/objects/deals", nil)
	require.Equal(t, http.StatusTooManyRequests, refused.status)
	require.Equal(t, "DAILY", refused.body["policyName"])
	require.Equal(t, "You have reached your daily limit.", refused.body["message"])
	require.Equal(t, "0", refused.header.Get(HeaderDailyRemaining))

	b.clock.Advance(15 * time.Hour) // past midnight UTC
	ok := b.call(t, http.MethodGet, "/crm/v3/objects/deals", nil)
	require.Equal(t, http.StatusOK, ok.status)
	require.Equal(t, "2", ok.header.Get(HeaderDailyRemaining))
}
