package notify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
)

const (
	smtpUser     = "desk"
	smtpPassword = "correct-horse-battery"
)

// selfSigned is a certificate for 127.0.0.1, made for the test, and a
// pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// mailServer is a real SMTP server on 127.0.0.1 (emersion/go-smtp) that
// takes AUTH PLAIN for smtpUser/smtpPassword and records what it is told.
type mailServer struct {
	addr string
	port int
	mu   sync.Mutex
	// auths are the sign-ins tried, and whether each came over TLS.
	auths   []bool
	mails   []sentMail
	refuse  func(rcpt string) error // a recipient's refusal, or nil
	authErr error                   // what a wrong password is answered
}

type sentMail struct {
	from string
	to   []string
	data []byte
}

type mailOptions struct {
	startTLS bool // offer STARTTLS
	implicit bool // TLS from the first byte
}

func newMailServer(t *testing.T, o mailOptions) (*mailServer, *x509.CertPool) {
	t.Helper()
	cert, pool := selfSigned(t)
	ms := &mailServer{authErr: smtp.ErrAuthFailed}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &mailSession{ms: ms, conn: c}, nil }))
	s.Domain = "127.0.0.1"
	s.AllowInsecureAuth = true // so that refusing AUTH in plain text is the client's doing
	s.ReadTimeout, s.WriteTimeout = 5*time.Second, 5*time.Second
	s.ErrorLog = nopLogger{}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}
	if o.startTLS {
		s.TLSConfig = tlsConfig
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if o.implicit {
		l = tls.NewListener(l, tlsConfig)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	ms.addr = l.Addr().String()
	ms.port = l.Addr().(*net.TCPAddr).Port
	return ms, pool
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}
func (nopLogger) Println(...any)        {}

func (ms *mailServer) sent() ([]sentMail, []bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]sentMail(nil), ms.mails...), append([]bool(nil), ms.auths...)
}

type mailSession struct {
	ms     *mailServer
	conn   *smtp.Conn
	signed bool
	mail   sentMail
}

func (s *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, password string) error {
		_, encrypted := s.conn.TLSConnectionState()
		s.ms.mu.Lock()
		s.ms.auths = append(s.ms.auths, encrypted)
		s.ms.mu.Unlock()
		if user != smtpUser || password != smtpPassword {
			s.ms.mu.Lock()
			defer s.ms.mu.Unlock()
			return s.ms.authErr
		}
		s.signed = true
		return nil
	}), nil
}

func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error {
	s.mail = sentMail{from: from}
	return nil
}

func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.ms.mu.Lock()
	refuse := s.ms.refuse
	s.ms.mu.Unlock()
	if refuse != nil {
		if err := refuse(to); err != nil {
			return err
		}
	}
	s.mail.to = append(s.mail.to, to)
	return nil
}

func (s *mailSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.mail.data = data
	s.ms.mu.Lock()
	s.ms.mails = append(s.ms.mails, s.mail)
	s.ms.mu.Unlock()
	return nil
}

func (s *mailSession) Reset()        { s.mail = sentMail{} }
func (s *mailSession) Logout() error { return nil }

// mailChannel is an email channel to ms; edit changes its settings.
func mailChannel(t *testing.T, ms *mailServer, pool *x509.CertPool, edit func(*config.AlertChannel), opts ...notify.Option) notify.Channel {
	t.Helper()
	t.Setenv("TEST_SMTP_PASSWORD", smtpPassword)
	cfg := config.AlertChannel{Kind: "email", Host: "127.0.0.1", Port: ms.port, Username: smtpUser, Password: "${TEST_SMTP_PASSWORD}",
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
	ms, pool := newMailServer(t, mailOptions{startTLS: true})
	now := clock.NewFake(time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC))
	m := message()
	m.Title = "crm paused — 12 minutes"
	require.NoError(t, mailChannel(t, ms, pool, nil, notify.WithClock(now)).Send(context.Background(), m))

	mails, auths := ms.sent()
	require.Equal(t, []bool{true}, auths, "one sign-in, over TLS")
	require.Len(t, mails, 1)
	got := mails[0]
	require.Equal(t, "syncdesk@example.com", got.from)
	require.Equal(t, []string{"ops@example.com", "bo@example.com"}, got.to)

	msg, err := mail.ReadMessage(strings.NewReader(string(got.data)))
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
	ms, pool := newMailServer(t, mailOptions{implicit: true})
	require.NoError(t, mailChannel(t, ms, pool, func(c *config.AlertChannel) { c.TLS = true }).Send(context.Background(), message()))
	mails, auths := ms.sent()
	require.Len(t, mails, 1)
	require.Equal(t, []bool{true}, auths)
}

func TestAWrongPasswordIsRefusedForGood(t *testing.T) {
	ms, pool := newMailServer(t, mailOptions{startTLS: true})
	t.Setenv("TEST_WRONG_PASSWORD", "wrong-password-xyz")
	err := mailChannel(t, ms, pool, func(c *config.AlertChannel) { c.Password = "${TEST_WRONG_PASSWORD}" }).Send(context.Background(), message())
	requirePermanent(t, err, true, "535: sending again will not change the password")
	require.Contains(t, err.Error(), "alert channel mail: the mail server refused to sign in as desk (535")
	require.NotContains(t, err.Error(), "wrong-password-xyz")
	mails, _ := ms.sent()
	require.Empty(t, mails)
}

// With starttls: required, a server that does not offer STARTTLS gets
// nothing: not the password, not the mail.
func TestStartTLSRequiredRefusesAServerWithoutIt(t *testing.T) {
	ms, _ := newMailServer(t, mailOptions{})
	err := mailChannel(t, ms, nil, nil).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "does not offer STARTTLS, and starttls: required sends nothing unencrypted")
	require.Contains(t, err.Error(), "alerts.channels.mail.starttls: opportunistic")
	mails, auths := ms.sent()
	require.Empty(t, auths, "the password was never sent")
	require.Empty(t, mails)
}

// Opportunistic sends mail in plain text to a server without STARTTLS,
// but never the password.
func TestOpportunisticNeverSendsThePasswordUnencrypted(t *testing.T) {
	ms, _ := newMailServer(t, mailOptions{})
	opportunistic := func(c *config.AlertChannel) { c.StartTLS = "opportunistic" }
	err := mailChannel(t, ms, nil, opportunistic).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "the password is never sent unencrypted")
	_, auths := ms.sent()
	require.Empty(t, auths)

	anonymous := func(c *config.AlertChannel) { opportunistic(c); c.Username, c.Password = "", "" }
	require.NoError(t, mailChannel(t, ms, nil, anonymous).Send(context.Background(), message()))
	mails, _ := ms.sent()
	require.Len(t, mails, 1, "a relay that takes mail without signing in")

	withTLS, pool := newMailServer(t, mailOptions{startTLS: true})
	require.NoError(t, mailChannel(t, withTLS, pool, opportunistic).Send(context.Background(), message()))
	_, auths = withTLS.sent()
	require.Equal(t, []bool{true}, auths, "offered, STARTTLS is used")
}

func TestAnUntrustedCertificateIsRefusedForGood(t *testing.T) {
	ms, _ := newMailServer(t, mailOptions{startTLS: true})
	err := mailChannel(t, ms, nil, nil).Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "STARTTLS with the mail server "+ms.addr+" failed")
	require.Contains(t, err.Error(), "certificate")
	_, auths := ms.sent()
	require.Empty(t, auths)
}

// A refused recipient sends the mail to no one: 5xx for good, 4xx for now.
func TestARefusedRecipientSendsToNoOne(t *testing.T) {
	for _, tc := range []struct {
		code      int
		permanent bool
	}{{550, true}, {450, false}} {
		ms, pool := newMailServer(t, mailOptions{startTLS: true})
		ms.refuse = func(rcpt string) error {
			if rcpt == "bo@example.com" {
				return &smtp.SMTPError{Code: tc.code, Message: "mailbox unavailable"}
			}
			return nil
		}
		err := mailChannel(t, ms, pool, nil).Send(context.Background(), message())
		requirePermanent(t, err, tc.permanent, tc.code)
		require.Contains(t, err.Error(), "the mail server refused the recipient bo@example.com ("+strconv.Itoa(tc.code))
		mails, _ := ms.sent()
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
