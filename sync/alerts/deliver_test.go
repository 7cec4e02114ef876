package alerts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/notify/notifytest"
)

func TestBackoffDoublesToItsCapWithJitter(t *testing.T) {
	for _, tc := range []struct {
		tries    int
		r        float64
		min, max time.Duration
	}{
		{1, 0, 5 * time.Second, 5 * time.Second},
		{1, 0.999, 9 * time.Second, 10 * time.Second},
		{2, 0, 10 * time.Second, 10 * time.Second},
		{4, 0.5, 60 * time.Second, 60 * time.Second},
		{7, 0, 5 * time.Minute, 5 * time.Minute}, // 640 s capped at 10 min, half of it
		{9, 0.999, 9 * time.Minute, 10 * time.Minute},
		{1000, 0.999, 9 * time.Minute, 10 * time.Minute},
	} {
		got := backoff(tc.tries, tc.r)
		require.True(t, got >= tc.min && got <= tc.max, "try %d, r %v: %v not within %v…%v", tc.tries, tc.r, got, tc.min, tc.max)
	}
}

// openPause pauses crm long enough to open an incident, and checks.
func openPause(t *testing.T, b *bundle) {
	t.Helper()
	_, _, err := models.Pause(b.db, models.ServicePause{Service: "crm", PausedBy: "ana@example.com", PausedAt: b.clock.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.NoError(t, b.a.Check(context.Background()))
}

func notifications(t *testing.T, db *gorm.DB) []models.IncidentNotification {
	t.Helper()
	var out []models.IncidentNotification
	require.NoError(t, db.Order("id").Find(&out).Error)
	return out
}

func TestAFailingChannelIsRetriedWithBackoff(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		b.rec.failFirst(2)
		openPause(t, b)
		ctx := context.Background()
		require.NoError(t, b.a.Deliver(ctx))
		n := notifications(t, db)[0]
		require.Equal(t, models.NotificationPending, n.Status)
		require.Equal(t, 1, n.Tries)
		require.Equal(t, b.clock.Now().Add(5*time.Second), n.NextAt.UTC(), "the first retry 5 s on (10 s, jitter at its least)")
		require.Contains(t, n.LastError, "connection refused")

		require.NoError(t, b.a.Deliver(ctx))
		require.Equal(t, 1, notifications(t, db)[0].Tries, "not retried before its time")

		b.clock.Advance(5 * time.Second)
		require.NoError(t, b.a.Deliver(ctx))
		n = notifications(t, db)[0]
		require.Equal(t, 2, n.Tries)
		require.Equal(t, b.clock.Now().Add(10*time.Second), n.NextAt.UTC(), "the wait doubles")

		b.clock.Advance(10 * time.Second)
		require.NoError(t, b.a.Deliver(ctx))
		n = notifications(t, db)[0]
		require.Equal(t, models.NotificationSent, n.Status)
		require.Equal(t, 3, n.Tries)
		require.Empty(t, n.LastError)
		require.NotNil(t, n.SentAt)
		require.Len(t, b.rec.messages(), 1)
	})
}

func TestARefusedOrEndlesslyFailingNotificationIsGivenUp(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		b.rec.fail = func(notify.Message) error {
			return fmt.Errorf("the receiver answered 400 Bad Request: %w", notify.ErrPermanent)
		}
		openPause(t, b)
		ctx := context.Background()
		require.NoError(t, b.a.Deliver(ctx))
		n := notifications(t, db)[0]
		require.Equal(t, models.NotificationGaveUp, n.Status, "a permanent failure is not retried")
		require.Equal(t, 1, n.Tries)
		require.Contains(t, n.LastError, "400 Bad Request")
		b.clock.Advance(time.Hour)
		require.NoError(t, b.a.Deliver(ctx))
		require.Equal(t, 1, notifications(t, db)[0].Tries)

		// A temporary failure, again and again, is given up after the last try.
		b2 := setup(t, dbtest.SQLite(t), config.Alerts{})
		b2.a.maxTries = 3
		b2.rec.fail = func(notify.Message) error { return errors.New("503 Service Unavailable") }
		openPause(t, b2)
		for range 5 {
			require.NoError(t, b2.a.Deliver(ctx))
			b2.clock.Advance(time.Hour)
		}
		n = notifications(t, b2.db)[0]
		require.Equal(t, models.NotificationGaveUp, n.Status)
		require.Equal(t, 3, n.Tries)
		require.Equal(t, 3, b2.rec.tries)
	})
}

// A Slack incoming webhook's address is its secret: a failed send keeps
// the host only, and no configured secret.
func TestAFailedSendKeepsNoSecret(t *testing.T) {
	b := setup(t, dbtest.SQLite(t), config.Alerts{})
	b.rec.fail = func(notify.Message) error {
		return &url.Error{Op: "Post", URL: "https://hooks.slack.example/services/T0/B0/sekr1tpathtoken", Err: errors.New("connection reset")}
	}
	openPause(t, b)
	require.NoError(t, b.a.Deliver(context.Background()))
	n := notifications(t, b.db)[0]
	require.NotContains(t, n.LastError, "sekr1tpathtoken")
	require.Contains(t, n.LastError, "hooks.slack.example")
	require.Contains(t, n.LastError, "connection reset")
}

// webhookTo is a webhook channel named rec, as setup's recorder is, that
// posts to url signed with hookSecret.
func webhookTo(t *testing.T, url string) notify.Channel {
	t.Helper()
	ch, err := notify.New("rec", config.AlertChannel{Kind: "webhook", URL: url, Secret: hookSecret})
	require.NoError(t, err)
	return ch
}

// A receiver that answers 429 or 503 with Retry-After is tried again no
// sooner than it asked, up to an hour; one asking for less than the
// backoff waits the backoff.
func TestAReceiversRetryAfterDelaysTheNextTry(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retryAfter string
		wait       time.Duration
	}{
		{http.StatusTooManyRequests, "120", 2 * time.Minute},
		{http.StatusServiceUnavailable, "900", 15 * time.Minute},
		{http.StatusServiceUnavailable, "86400", time.Hour}, // a day asked: an hour at most
		{http.StatusTooManyRequests, "1", 5 * time.Second},  // less than the backoff: the backoff
	} {
		t.Run(fmt.Sprintf("%d Retry-After %s", tc.status, tc.retryAfter), func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Retry-After", tc.retryAfter)
					w.WriteHeader(tc.status)
				}))
				defer srv.Close()
				b := setup(t, db, config.Alerts{})
				b.a.channels = map[string]notify.Channel{"rec": webhookTo(t, srv.URL)}
				openPause(t, b)
				require.NoError(t, b.a.Deliver(context.Background()))
				n := notifications(t, db)[0]
				require.Equal(t, models.NotificationPending, n.Status)
				require.Equal(t, b.clock.Now().Add(tc.wait), n.NextAt.UTC(), "the next try waits %v", tc.wait)
			})
		})
	}
}

// A receiver that takes the request and never answers costs one try of
// one notification: Check goes on meanwhile, and Deliver returns after
// the send's time limit with the notification to retry.
func TestAReceiverThatHangsHoldsNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		b.a.channels = map[string]notify.Channel{"rec": webhookTo(t, notifytest.Hanging(t).URL)}
		b.a.sendTimeout = 300 * time.Millisecond
		openPause(t, b)

		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- b.a.Deliver(context.Background()) }()
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, b.a.Check(context.Background()))
		require.Less(t, time.Since(start), 300*time.Millisecond, "a check does not wait for a send")
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Deliver still waits for a receiver that hangs")
		}
		n := notifications(t, db)[0]
		require.Equal(t, models.NotificationPending, n.Status)
		require.Contains(t, n.LastError, "did not answer within 300ms")
	})
}

// An instance that claimed a notification and died leaves it to the
// others once its lease is over; its late outcome is then not written.
func TestANotificationLeftByADeadInstanceIsSentAfterItsLease(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		openPause(t, b)
		claimed, err := models.ClaimNotifications(db, "dead-instance", b.clock.Now(), time.Minute, 10)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.NoError(t, b.a.Deliver(context.Background()))
		require.Empty(t, b.rec.messages(), "not while the claim's lease lasts")
		b.clock.Advance(time.Minute)
		require.NoError(t, b.a.Deliver(context.Background()))
		require.Len(t, b.rec.messages(), 1)
		ok, err := models.FinishNotification(db, claimed[0].ID, "dead-instance", models.NotificationOutcome{Status: models.NotificationGaveUp})
		require.NoError(t, err)
		require.False(t, ok, "the dead instance's claim is no longer the notification's")
		require.Equal(t, models.NotificationSent, notifications(t, db)[0].Status)
	})
}

func TestDeliverSendsMoreThanOneBatch(t *testing.T) {
	b := setup(t, dbtest.SQLite(t), config.Alerts{})
	b.a.batch = 2
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		_, _, err := models.Pause(b.db, models.ServicePause{Service: s, PausedBy: "ana@example.com", PausedAt: b.clock.Now().Add(-time.Hour)})
		require.NoError(t, err)
	}
	require.NoError(t, b.a.Check(context.Background()))
	require.NoError(t, b.a.Deliver(context.Background()))
	require.Len(t, b.rec.messages(), 5)
}

func TestIncidentsOverLongAgoArePruned(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		openPause(t, b)
		_, err := models.Resume(db, "crm")
		require.NoError(t, err)
		b.step(t)
		b.clock.Advance(89 * 24 * time.Hour)
		b.step(t)
		var n int64
		require.NoError(t, db.Model(&models.Incident{}).Count(&n).Error)
		require.EqualValues(t, 1, n, "kept 90 days")
		b.clock.Advance(2 * 24 * time.Hour)
		b.step(t)
		require.NoError(t, db.Model(&models.Incident{}).Count(&n).Error)
		require.Zero(t, n)
		require.Empty(t, notifications(t, db), "with its notifications")
	})
}

// A real receiver that is down (its port refuses): the notification is
// sent again after its backoff, and once the receiver is back it arrives
// once, verified.
func TestAReceiverThatIsDownGetsTheNotificationWhenBack(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		addr := notifytest.RefusedAddr(t)
		b := setup(t, db, config.Alerts{})
		b.a.channels = map[string]notify.Channel{"rec": webhookTo(t, "http://"+addr+"/hooks")}
		openPause(t, b)
		ctx := context.Background()
		require.NoError(t, b.a.Deliver(ctx))
		n := notifications(t, db)[0]
		require.Equal(t, models.NotificationPending, n.Status)
		require.Contains(t, n.LastError, "could not reach the receiver")
		require.Contains(t, n.LastError, "connection refused")

		rc := notifytest.WebhookAt(t, hookSecret, addr) // back
		require.NoError(t, b.a.Deliver(ctx))
		require.Empty(t, rc.Requests(), "not before its backoff")
		b.clock.Advance(5 * time.Second)
		require.NoError(t, b.a.Deliver(ctx))
		require.NoError(t, b.a.Deliver(ctx))
		got := rc.Verified()
		require.Len(t, got, 1, "once, verified")
		e, err := got[0].Event()
		require.NoError(t, err)
		require.Equal(t, "incident.opened", e.Type)
		require.Equal(t, "crm has been paused for 60 minutes", e.Data["title"])
		n = notifications(t, db)[0]
		require.Equal(t, models.NotificationSent, n.Status)
		require.Equal(t, 2, n.Tries)
	})
}

// A channel's own timeout bounds its sends, above the default as below it:
// a receiver that answers after 600 ms is waited for when the channel says
// 2s, though sends of channels the configuration does not describe stop at
// 300 ms here.
func TestAChannelsOwnTimeoutBoundsItsSends(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		rc := notifytest.NewReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
			time.Sleep(600 * time.Millisecond)
			w.WriteHeader(http.StatusNoContent)
			return true
		})
		cfg := config.AlertChannel{Kind: "webhook", URL: rc.URL, Secret: hookSecret, Timeout: 2 * time.Second}
		ch, err := notify.New("rec", cfg)
		require.NoError(t, err)
		b := setupChannels(t, db, config.Alerts{Channels: map[string]config.AlertChannel{"rec": cfg}}, map[string]notify.Channel{"rec": ch})
		b.a.sendTimeout = 300 * time.Millisecond
		openPause(t, b)
		require.NoError(t, b.a.Deliver(context.Background()))
		n := notifications(t, db)[0]
		require.Equal(t, models.NotificationSent, n.Status, n.LastError)
		require.GreaterOrEqual(t, b.a.lease, 2*time.Second+30*time.Second, "a claim outlasts the channel's longest send")
	})
}

// A channel gets an incident's notifications in the order they were
// decided: a "resolved" due at once waits for the "opened" whose first
// send failed, and goes after it.
func TestAResolvedNeverOvertakesTheOpenedWaitingForItsRetry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{})
		b.rec.failFirst(1)
		openPause(t, b)
		ctx := context.Background()
		require.NoError(t, b.a.Deliver(ctx))
		require.Empty(t, b.rec.messages(), "the first send failed")

		_, err := models.Resume(db, "crm")
		require.NoError(t, err)
		b.step(t)
		require.Empty(t, b.rec.messages(), "the resolved waits for the opened")
		b.clock.Advance(5 * time.Second)
		b.step(t)
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened, notify.Resolved}, b.states())
	})
}

// A channel down for hours misses the repeats: once it is back it gets the
// opening and where the incident stands now, not every repeat in a burst.
func TestRepeatsANewerNotificationReplacesAreNotSent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		b := setup(t, db, config.Alerts{Repeat: time.Hour})
		down := true
		b.rec.fail = func(notify.Message) error {
			if down {
				return errors.New("503 Service Unavailable")
			}
			return nil
		}
		openPause(t, b)
		for range 4 {
			b.clock.Advance(time.Hour)
			b.step(t)
		}
		down = false
		b.clock.Advance(10 * time.Minute) // past the opened's backoff
		b.step(t)
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened, notify.Repeated}, b.states(), "the latest repeat only")
		require.Contains(t, b.rec.messages()[1].Title, "paused for 5 hours")

		_, err := models.Resume(db, "crm")
		require.NoError(t, err)
		b.step(t)
		require.Equal(t, []notify.State{notify.Opened, notify.Repeated, notify.Resolved}, b.states())
		var statuses []string
		for _, n := range notifications(t, db) {
			statuses = append(statuses, n.Status)
		}
		require.Equal(t, []string{"sent", "superseded", "superseded", "superseded", "sent", "sent"}, statuses)
	})
}
