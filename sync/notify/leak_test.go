package notify_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/notify/notifytest"
)

// echo answers 400 with the whole request it got, and whatever else is
// given, as a careless receiver does.
func echo(extra ...string) notifytest.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		dump, _ := httputil.DumpRequest(r, false)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "refused %s%s %s\n%s\n%s", r.Host, r.URL, dump, body, strings.Join(extra, " "))
		return false
	}
}

func requireNoSecret(t *testing.T, err error, secrets ...string) {
	t.Helper()
	require.Error(t, err)
	for _, s := range secrets {
		require.NotContains(t, err.Error(), s)
	}
	require.LessOrEqual(t, len(err.Error()), 700, "an error's text is bounded")
}

func TestAWebhooksSecretsStayOutOfItsErrors(t *testing.T) {
	t.Setenv("HOOK_SECRET", hookSecret)
	t.Setenv("HOOK_TOKEN", "hook-bearer-token-123")
	key := strings.TrimPrefix(hookSecret, "whsec_")
	rc := notifytest.NewReceiver(t, echo(hookSecret, key, `{"secret":"`+key+`"}`))
	ch, err := notify.New("ops", config.AlertChannel{Kind: "webhook", URL: rc.URL, Secret: "${HOOK_SECRET}",
		Headers: map[string]string{"Authorization": "Bearer ${HOOK_TOKEN}"}})
	require.NoError(t, err)
	err = ch.Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "the receiver answered 400 Bad Request: refused", "the answer is quoted, redacted")
	requireNoSecret(t, err, hookSecret, key, "hook-bearer-token-123")
	require.Equal(t, "Bearer hook-bearer-token-123", rc.Requests()[0].Header.Get("Authorization"), "the header was sent")
}

// A webhook URL whose path holds its token (as Zapier's do) is not quoted
// in the error when the receiver echoes it back.
func TestAWebhooksTokenPathStaysOutOfItsErrors(t *testing.T) {
	rc := notifytest.NewReceiver(t, nil)
	path := "/hooks/catch/123456/abcdef/"
	rc.Handle(echo(path))
	err := webhookChannel(t, rc.URL+path).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "the receiver answered 400 Bad Request")
	requireNoSecret(t, err, path)
}

func TestASlackURLStaysOutOfItsErrors(t *testing.T) {
	rc := notifytest.NewReceiver(t, nil)
	url := rc.URL + "/services/" + notifytest.SlackToken
	escaped := strings.ReplaceAll(url, "/", `\/`)
	rc.Handle(echo(url, escaped, "token="+notifytest.SlackToken))
	err := slackChannel(t, url).Send(context.Background(), message())
	requirePermanent(t, err, true)
	requireNoSecret(t, err, url, notifytest.SlackPath, notifytest.SlackToken, "abcdefghijklmnopqrstuvwx", escaped)

	rc.Close() // no answer at all: the error of the dial does not quote the URL either
	err = slackChannel(t, url).Send(context.Background(), message())
	requirePermanent(t, err, false)
	requireNoSecret(t, err, "/services/", notifytest.SlackToken)
}

// A server that refuses a sign-in quoting the password back, alone and in
// the AUTH PLAIN form it came in, has neither quoted in the error.
func TestAnSMTPPasswordStaysOutOfItsErrors(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
	t.Setenv("TEST_WRONG_PASSWORD", "wrong-password-xyz")
	plain := base64.StdEncoding.EncodeToString([]byte("\x00desk\x00wrong-password-xyz"))
	ms.AnswerWrongPassword(&smtp.SMTPError{Code: 535, Message: "no such pair desk/wrong-password-xyz " + plain})
	err := mailChannel(t, ms, ms.Pool, func(c *config.AlertChannel) { c.Password = "${TEST_WRONG_PASSWORD}" }).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "no such pair desk/[redacted] [redacted]")
	requireNoSecret(t, err, "wrong-password-xyz", plain)
}

func TestAHugeAnswerIsReadOnlyInPart(t *testing.T) {
	rc := notifytest.NewReceiver(t, notifytest.Answer(http.StatusBadRequest, strings.Repeat("no ", 1<<20)))
	err := webhookChannel(t, rc.URL).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.LessOrEqual(t, len(err.Error()), 700)
	require.Contains(t, err.Error(), "…", "it says it was cut")
}

// A receiver that never answers holds a send no longer than the channel's
// timeout; a caller that gives up ends it at once.
func TestASendNeverOutlivesItsTimeout(t *testing.T) {
	rc := notifytest.Hanging(t)
	for _, kind := range []string{"webhook", "slack"} {
		ch, err := notify.New("ops", config.AlertChannel{Kind: kind, URL: rc.URL + "/services/" + notifytest.SlackToken, Secret: hookSecret, Timeout: 300 * time.Millisecond})
		require.NoError(t, err)
		start := time.Now()
		err = ch.Send(context.Background(), message())
		require.Less(t, time.Since(start), 2*time.Second, kind)
		requirePermanent(t, err, false, kind)
		require.True(t, errors.Is(err, context.DeadlineExceeded), "%s: %v", kind, err)
		require.Contains(t, err.Error(), "no answer within 300ms")

		patient, err := notify.New("ops", config.AlertChannel{Kind: kind, URL: rc.URL + "/services/" + notifytest.SlackToken, Secret: hookSecret, Timeout: time.Minute})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start = time.Now()
		err = patient.Send(ctx, message())
		cancel()
		require.Less(t, time.Since(start), 5*time.Second, "%s: the caller's deadline is kept too", kind)
		require.True(t, errors.Is(err, context.DeadlineExceeded), "%s: %v", kind, err)
	}
}
