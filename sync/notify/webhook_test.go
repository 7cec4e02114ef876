package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox/verify"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/notify/notifytest"
)

func webhookChannel(t *testing.T, url string, opts ...notify.Option) notify.Channel {
	t.Helper()
	ch, err := notify.New("ops", config.AlertChannel{Kind: "webhook", URL: url, Secret: hookSecret}, opts...)
	require.NoError(t, err)
	return ch
}

func TestAWebhookIsSignedAsTheStandardWebhooksLibraryVerifies(t *testing.T) {
	rc := notifytest.Webhook(t, hookSecret)
	now := clock.NewFake(time.Now().Truncate(time.Second)) // the library checks the timestamp against its clock
	ch := webhookChannel(t, rc.URL, notify.WithClock(now))
	m := message()
	require.NoError(t, ch.Send(context.Background(), m))

	got := rc.Requests()
	require.Len(t, got, 1)
	h := got[0].Header
	require.Equal(t, m.ID, h.Get("webhook-id"), "the notification's id, the same on every retry")
	require.Equal(t, strconv.FormatInt(now.Now().Unix(), 10), h.Get("webhook-timestamp"), "the attempt's time")
	require.Regexp(t, `^v1,[A-Za-z0-9+/]+=*$`, h.Get("webhook-signature"))
	require.Equal(t, "application/json", h.Get("Content-Type"))

	// Our own inbound verifier reads the same signature the same way.
	_, err := verify.Verify(verify.Config{Scheme: verify.Standard, Secrets: [][]byte{[]byte(hookSecret)}}, h, got[0].Body, now.Now())
	require.NoError(t, err)

	var body struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      map[string]any
	}
	require.NoError(t, json.Unmarshal(got[0].Body, &body))
	require.Equal(t, "incident.opened", body.Type)
	require.True(t, m.At.Equal(body.Timestamp), "the payload's timestamp is when the state was decided")
	require.Equal(t, map[string]any{
		"incident": float64(12), "rule": "service_paused", "subject": "crm", "state": "opened",
		"title": m.Title, "text": m.Text, "url": m.URL, "at": "2026-12-01T10:14:00Z",
	}, body.Data)
}

func TestEveryStateHasItsEventType(t *testing.T) {
	rc := notifytest.Webhook(t, hookSecret)
	ch := webhookChannel(t, rc.URL)
	for state, typ := range map[notify.State]string{notify.Opened: "incident.opened", notify.Repeated: "incident.repeated", notify.Resolved: "incident.resolved"} {
		m := message()
		m.State = state
		require.NoError(t, ch.Send(context.Background(), m))
		got := rc.Requests()
		var body struct{ Type string }
		require.NoError(t, json.Unmarshal(got[len(got)-1].Body, &body))
		require.Equal(t, typ, body.Type, "state %q", state)
	}
	m := message()
	m.State = "lost"
	requirePermanent(t, ch.Send(context.Background(), m), true, "a state no receiver knows is the caller's bug")
	m = message()
	m.ID = ""
	requirePermanent(t, ch.Send(context.Background(), m), true, "no id, no way to drop a repeat")
	m = message()
	m.Title = ""
	requirePermanent(t, ch.Send(context.Background(), m), true, "no title, nothing to lead with")
	require.Len(t, rc.Requests(), 3, "nothing is sent of a notification no receiver could read")
}

// A receiver holding another secret refuses the delivery: the signature
// is what it checks, not merely that one is there.
func TestAWrongSecretFailsVerification(t *testing.T) {
	other := "whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=" // 32 × "A"
	rc := notifytest.Webhook(t, other)
	err := webhookChannel(t, rc.URL).Send(context.Background(), message())
	requirePermanent(t, err, true, "401: the receiver refuses it")
	require.Contains(t, err.Error(), "alert channel ops: the receiver answered 401 Unauthorized")
	require.Contains(t, err.Error(), "no matching signature found", "the receiver's reason is quoted")
	require.Len(t, rc.Requests(), 1, "one attempt per Send: retrying is the caller's")
}

func TestWebhookAnswersSayWhetherSendingAgainMayHelp(t *testing.T) {
	for _, tc := range []struct {
		status    int
		permanent bool
	}{
		{301, true}, {302, true}, {400, true}, {401, true}, {403, true}, {404, true}, {410, true}, {422, true},
		{408, false}, {429, false}, {500, false}, {502, false}, {503, false}, {504, false},
	} {
		rc := notifytest.NewReceiver(t, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
			if tc.status/100 == 3 {
				http.Redirect(w, r, "https://elsewhere.example.com/", tc.status)
				return false
			}
			w.WriteHeader(tc.status)
			return false
		})
		err := webhookChannel(t, rc.URL).Send(context.Background(), message())
		requirePermanent(t, err, tc.permanent, tc.status)
		require.Len(t, rc.Requests(), 1, "%d: no redirect is followed, nothing is retried", tc.status)
	}
	for _, code := range []int{200, 201, 202, 204} {
		rc := notifytest.NewReceiver(t, notifytest.Answer(code, ""))
		require.NoError(t, webhookChannel(t, rc.URL).Send(context.Background(), message()), code)
	}
}

func TestRetryAfterIsPassedOn(t *testing.T) {
	rc := notifytest.NewReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		return false
	})
	err := webhookChannel(t, rc.URL).Send(context.Background(), message())
	requirePermanent(t, err, false)
	require.Equal(t, 7*time.Second, notify.RetryAfter(err))
	require.Zero(t, notify.RetryAfter(context.Canceled))
}

func TestAnUnreachableReceiverMayBeTriedAgain(t *testing.T) {
	rc := notifytest.NewReceiver(t, notifytest.Answer(204, ""))
	url := rc.URL
	rc.Close()
	err := webhookChannel(t, url+"/hooks").Send(context.Background(), message())
	requirePermanent(t, err, false)
	require.Contains(t, err.Error(), "could not reach the receiver")
	require.NotContains(t, err.Error(), "/hooks", "the URL is not quoted: for Slack it is the credential")
}

// Dozens of goroutines share one channel; every notification arrives,
// signed for its own id.
func TestOneWebhookChannelSendsConcurrently(t *testing.T) {
	rc := notifytest.Webhook(t, hookSecret)
	ch := webhookChannel(t, rc.URL)
	sendConcurrently(t, ch, 40)
	ids := map[string]bool{}
	for _, r := range rc.Requests() {
		ids[r.Header.Get("webhook-id")] = true
	}
	require.Len(t, ids, 40)
}

// sendConcurrently sends n notifications, ntf_0 to ntf_n-1, through ch from
// as many goroutines at once; each must be sent.
func sendConcurrently(t *testing.T, ch notify.Channel, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := message()
			m.ID = fmt.Sprintf("ntf_%d", i)
			errs <- ch.Send(context.Background(), m)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
