package notify_test

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/notify/notifytest"
)

// mailChannel is an email channel to ms; edit changes its settings.
func mailChannel(t *testing.T, ms *notifytest.MailServer, pool *x509.CertPool, edit func(*config.AlertChannel), opts ...notify.Option) notify.Channel {
	t.Helper()
	t.Setenv("TEST_SMTP_PASSWORD", notifytest.MailPassword)
	cfg := config.AlertChannel{Kind: "email", Host: "127.0.0.1", Port: ms.Port, Username: notifytest.MailUser, Password: "${TEST_SMTP_PASSWORD}",
		From: "Syncdesk <syncdesk@example.com>", To: []string{"ops@example.com", "Bo Ek <bo@example.com>"}}
	if edit != nil {
		edit(&cfg)
	}
	if pool != nil {
		opts = append(opts, notify.WithRootCAs(pool))
	}
	ch, err := notify.New("mail", cfg, opts...)
	require.NoError(t, err)
	return ch
}

func TestAMailArrivesOverSTARTTLSWithItsHeaders(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
	now := clock.NewFake(time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC))
	m := message()
	m.Title = "crm paused — 12 minutes"
	require.NoError(t, mailChannel(t, ms, ms.Pool, nil, notify.WithClock(now)).Send(context.Background(), m))

	mails, auths := ms.Sent()
	require.Equal(t, []bool{true}, auths, "one sign-in, over TLS")
	require.Len(t, mails, 1)
	got := mails[0]
	require.Equal(t, "syncdesk@example.com", got.From)
	require.Equal(t, []string{"ops@example.com", "bo@example.com"}, got.To)

	msg, err := mail.ReadMessage(strings.NewReader(string(got.Data)))
	require.NoError(t, err)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "[syncdesk] crm paused — 12 minutes", subject)
	require.Equal(t, "<ntf_12_1@example.com>", msg.Header.Get("Message-ID"))
	date, err := msg.Header.Date()
	require.NoError(t, err)
	require.True(t, date.Equal(now.Now()), "Date is the sending time: %v", date)
	require.Equal(t, `"Syncdesk" <syncdesk@example.com>`, msg.Header.Get("From"))
	to, err := msg.Header.AddressList("To")
	require.NoError(t, err)
	require.Len(t, to, 2)
	require.Equal(t, "Bo Ek", to[1].Name)
	require.Equal(t, "auto-generated", msg.Header.Get("Auto-Submitted"))
	require.Equal(t, "text/plain; charset=utf-8", msg.Header.Get("Content-Type"))

	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	require.NoError(t, err)
	require.Contains(t, string(body), m.Title)
	require.Contains(t, string(body), m.Text)
	require.Contains(t, string(body), "Open it in syncdesk: "+m.URL)
	require.Contains(t, string(body), "Opened: incident 12 about crm (rule service_paused), 1 Dec 2026 10:14 UTC.")
}

func TestAMailOverImplicitTLS(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{Implicit: true})
	require.NoError(t, mailChannel(t, ms, ms.Pool, func(c *config.AlertChannel) { c.TLS = true }).Send(context.Background(), message()))
	mails, auths := ms.Sent()
	require.Len(t, mails, 1)
	require.Equal(t, []bool{true}, auths)
}

func TestAWrongPasswordIsRefusedForGood(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
	t.Setenv("TEST_WRONG_PASSWORD", "wrong-password-xyz")
	err := mailChannel(t, ms, ms.Pool, func(c *config.AlertChannel) { c.Password = "${TEST_WRONG_PASSWORD}" }).Send(context.Background(), message())
	requirePermanent(t, err, true, "535: sending again will not change the password")
	require.Contains(t, err.Error(), "alert channel mail: the mail server refused to sign in as desk (535")
	require.NotContains(t, err.Error(), "wrong-password-xyz")
	mails, _ := ms.Sent()
	require.Empty(t, mails)
}

// With starttls: required, a server that does not offer STARTTLS gets
// nothing: not the password, not the mail.
func TestStartTLSRequiredRefusesAServerWithoutIt(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{})
	err := mailChannel(t, ms, nil, nil).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "does not offer STARTTLS, and starttls: required sends nothing unencrypted")
	require.Contains(t, err.Error(), "alerts.channels.mail.starttls: opportunistic")
	mails, auths := ms.Sent()
	require.Empty(t, auths, "the password was never sent")
	require.Empty(t, mails)
}

// Opportunistic sends mail in plain text to a server without STARTTLS,
// but never the password.
func TestOpportunisticNeverSendsThePasswordUnencrypted(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{})
	opportunistic := func(c *config.AlertChannel) { c.StartTLS = "opportunistic" }
	err := mailChannel(t, ms, nil, opportunistic).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "the password is never sent unencrypted")
	_, auths := ms.Sent()
	require.Empty(t, auths)

	anonymous := func(c *config.AlertChannel) { opportunistic(c); c.Username, c.Password = "", "" }
	require.NoError(t, mailChannel(t, ms, nil, anonymous).Send(context.Background(), message()))
	mails, _ := ms.Sent()
	require.Len(t, mails, 1, "a relay that takes mail without signing in")

	withTLS := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
	require.NoError(t, mailChannel(t, withTLS, withTLS.Pool, opportunistic).Send(context.Background(), message()))
	_, auths = withTLS.Sent()
	require.Equal(t, []bool{true}, auths, "offered, STARTTLS is used")
}

func TestAnUntrustedCertificateIsRefusedForGood(t *testing.T) {
	ms := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
	err := mailChannel(t, ms, nil, nil).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "STARTTLS with the mail server "+ms.Addr+" failed")
	require.Contains(t, err.Error(), "certificate")
	_, auths := ms.Sent()
	require.Empty(t, auths)
}

// A refused recipient sends the mail to no one: 5xx for good, 4xx for now.
func TestARefusedRecipientSendsToNoOne(t *testing.T) {
	for _, tc := range []struct {
		code      int
		permanent bool
	}{{550, true}, {450, false}} {
		ms := notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})
		ms.Refuse(func(rcpt string) error {
			if rcpt == "bo@example.com" {
				return &smtp.SMTPError{Code: tc.code, Message: "mailbox unavailable"}
			}
			return nil
		})
		err := mailChannel(t, ms, ms.Pool, nil).Send(context.Background(), message())
		requirePermanent(t, err, tc.permanent, tc.code)
		require.Contains(t, err.Error(), "the mail server refused the recipient bo@example.com ("+strconv.Itoa(tc.code))
		mails, _ := ms.Sent()
		require.Empty(t, mails, "%d", tc.code)
	}
}

func TestAMailServerThatNeverAnswersIsLeftWithinTheTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // accepts, never greets
		}
	}()
	ch, err := notify.New("mail", config.AlertChannel{Kind: "email", Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port,
		From: "syncdesk@example.com", To: []string{"ops@example.com"}, Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	err = ch.Send(context.Background(), message())
	require.Less(t, time.Since(start), 2*time.Second)
	requirePermanent(t, err, false)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.Contains(t, err.Error(), "no answer within 300ms")

	patient, err := notify.New("mail", config.AlertChannel{Kind: "email", Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port,
		From: "syncdesk@example.com", To: []string{"ops@example.com"}, Timeout: time.Minute})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start = time.Now()
	err = patient.Send(ctx, message())
	require.Less(t, time.Since(start), 5*time.Second, "a caller that gives up ends the wait at once")
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.Contains(t, err.Error(), "the send was called off")
}
