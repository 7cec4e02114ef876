package faults

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEachFaultDoesWhatItSays(t *testing.T) {
	var committed atomic.Int32
	in := New(Options{RetryAfter: 2 * time.Second, HangFor: 5 * time.Second})
	srv := httptest.NewServer(in.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		committed.Add(1)
		_, _ = io.WriteString(w, `{"id":"1"}`)
	})))
	defer srv.Close()
	post := func(timeout time.Duration) (*http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.ReadAll(res.Body)
			res.Body.Close()
		}
		return res, err
	}

	in.Script(Error5xx, TooMany, Hang, Lost, None)
	res, err := post(time.Second)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	res, err = post(time.Second)
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Equal(t, "2", res.Header.Get("Retry-After"))
	_, err = post(200 * time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a hang outlasts the client")
	require.Zero(t, committed.Load(), "5xx, 429 and hang commit nothing")
	_, err = post(time.Second)
	require.Error(t, err, "a lost answer is no answer")
	require.EqualValues(t, 1, committed.Load(), "but the work was done")
	res, err = post(time.Second)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.EqualValues(t, 2, committed.Load())
	require.Equal(t, map[Kind]int{Error5xx: 1, TooMany: 1, Hang: 1, Lost: 1, None: 1}, in.Counts())
}

func TestRatesAreDrawnAndReadsSpared(t *testing.T) {
	in := New(Options{Rate5xx: 0.5, Seed: 7})
	srv := httptest.NewServer(in.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	defer srv.Close()
	for range 200 {
		res, err := http.Get(srv.URL)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, "reads meet no faults unless asked")
	}
	fails := 0
	for range 200 {
		res, err := http.Post(srv.URL, "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable {
			fails++
		}
	}
	require.InDelta(t, 100, fails, 30, "about half the writes fail")
}
