package notify_test

import (
	"context"
	"crypto/x509"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/notify/notifytest"
)

func TestFromConfigMakesEveryChannel(t *testing.T) {
	rc := notifytest.Webhook(t, hookSecret)
	chans, err := notify.FromConfig(config.Alerts{Channels: map[string]config.AlertChannel{
		"hook": {Kind: "webhook", URL: rc.URL, Secret: hookSecret},
		"chat": {Kind: "slack", URL: rc.URL},
		"mail": {Kind: "email", Host: "127.0.0.1", From: "syncdesk@example.com", To: []string{"ops@example.com"}},
	}})
	require.NoError(t, err)
	require.Len(t, chans, 3)
	require.NoError(t, chans["hook"].Send(context.Background(), message()))

	_, err = notify.FromConfig(config.Alerts{Channels: map[string]config.AlertChannel{
		"sms":  {Kind: "sms"},
		"hook": {Kind: "webhook", URL: rc.URL, Secret: "whsec_not base64!"},
	}})
	require.ErrorContains(t, err, `setting alerts.channels.sms.kind: "sms" is not webhook, slack or email`)
	require.ErrorContains(t, err, "setting alerts.channels.hook.secret: is not whsec_ followed by base64")
	require.NotContains(t, err.Error(), "not base64!")
}

// A receiver behind HTTPS is trusted through the system's CAs, or the
// pool given; one whose certificate is not trusted is refused for good.
func TestAnHTTPSReceiverMustBeTrusted(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	err := webhookChannel(t, srv.URL).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "certificate")

	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	require.NoError(t, webhookChannel(t, srv.URL, notify.WithRootCAs(pool)).Send(context.Background(), message()))
}

// A title holding a line break cannot add a header to the mail.
func TestATitleCannotForgeAMailHeader(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
	m := message()
	m.Title = "crm paused\r\nBcc: someone@evil.example"
	require.NoError(t, mailChannel(t, ms, ms.Pool, nil).Send(context.Background(), m))
	mails, _ := ms.Sent()
	require.Len(t, mails, 1)
	require.Equal(t, []string{"ops@example.com", "bo@example.com"}, mails[0].To)
	msg, err := mail.ReadMessage(strings.NewReader(string(mails[0].Data)))
	require.NoError(t, err)
	require.Empty(t, msg.Header.Get("Bcc"))
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "[syncdesk] crm paused  Bcc: someone@evil.example", subject)
}

// An id that cannot stand in a Message-ID is hashed, the same on a retry.
func TestAMessageIDIsValidForAnyID(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
	ch := mailChannel(t, ms, ms.Pool, nil)
	m := message()
	m.ID = "incident:12/opened@1"
	require.NoError(t, ch.Send(context.Background(), m))
	require.NoError(t, ch.Send(context.Background(), m))
	mails, _ := ms.Sent()
	require.Len(t, mails, 2)
	var ids []string
	for _, sent := range mails {
		msg, err := mail.ReadMessage(strings.NewReader(string(sent.Data)))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, msg.Body)
		ids = append(ids, msg.Header.Get("Message-ID"))
	}
	require.Regexp(t, `^<h[0-9a-f]{32}@example\.com>$`, ids[0])
	require.Equal(t, ids[0], ids[1])
}

// One e-mail channel serves dozens of goroutines, each on its own
// connection.
func TestOneEmailChannelSendsConcurrently(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
	ch := mailChannel(t, ms, ms.Pool, nil)
	sendConcurrently(t, ch, 24)
	mails, auths := ms.Sent()
	require.Len(t, mails, 24)
	require.Len(t, auths, 24)
}

// A long title in any script stays within a mail line's limit, and reads
// back whole but for the cut.
func TestALongTitleMakesAValidSubject(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
	m := message()
	m.Title = strings.Repeat("Ошибка синхронизации ", 30)
	require.NoError(t, mailChannel(t, ms, ms.Pool, nil).Send(context.Background(), m))
	mails, _ := ms.Sent()
	require.Len(t, mails, 1)
	for _, line := range strings.Split(string(mails[0].Data), "\r\n") {
		require.LessOrEqual(t, len(line), 998)
	}
	msg, err := mail.ReadMessage(strings.NewReader(string(mails[0].Data)))
	require.NoError(t, err)
	got, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(got, "[syncdesk] Ошибка синхронизации Ошибка"), got)
	require.True(t, strings.HasSuffix(got, "…"), got)
	require.Len(t, []rune(got), len([]rune("[syncdesk] "))+200)
}
