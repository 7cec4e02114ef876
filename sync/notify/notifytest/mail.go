package notifytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"
)

// The one sign-in a MailServer takes.
const (
	MailUser     = "desk"
	MailPassword = "correct-horse-battery"
)

// MailOptions say how a MailServer speaks TLS.
type MailOptions struct {
	StartTLS bool // offer STARTTLS
	Implicit bool // TLS from the first byte
}

// MailServer is a real SMTP server on 127.0.0.1 (emersion/go-smtp) that
// takes AUTH PLAIN for MailUser/MailPassword and records what it is told.
type MailServer struct {
	Addr string
	Port int
	// Pool trusts the server's certificate: a client's root CAs.
	Pool *x509.CertPool

	mu      sync.Mutex
	auths   []bool // the sign-ins tried, and whether each came over TLS
	mails   []SentMail
	refuse  func(rcpt string) error
	authErr error
}

// SentMail is one mail a MailServer took.
type SentMail struct {
	From string
	To   []string
	Data []byte
}

// Mail starts a mail server with a certificate for 127.0.0.1 made for the
// test, stopped with the test.
func Mail(t testing.TB, o MailOptions) *MailServer {
	t.Helper()
	cert, pool := selfSigned(t)
	ms := &MailServer{Pool: pool, authErr: smtp.ErrAuthFailed}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &mailSession{ms: ms, conn: c}, nil }))
	s.Domain = "127.0.0.1"
	s.AllowInsecureAuth = true // so that refusing AUTH in plain text is the client's doing
	s.ReadTimeout, s.WriteTimeout = 5*time.Second, 5*time.Second
	s.ErrorLog = nopLogger{}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}
	if o.StartTLS {
		s.TLSConfig = tlsConfig
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if o.Implicit {
		l = tls.NewListener(l, tlsConfig)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	ms.Addr = l.Addr().String()
	ms.Port = l.Addr().(*net.TCPAddr).Port
	return ms
}

// Sent are the mails taken so far, and the sign-ins tried (true: over TLS).
func (ms *MailServer) Sent() ([]SentMail, []bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]SentMail(nil), ms.mails...), append([]bool(nil), ms.auths...)
}

// Refuse makes refuse answer each recipient from now on: an error refuses it.
func (ms *MailServer) Refuse(refuse func(rcpt string) error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.refuse = refuse
}

// AnswerWrongPassword makes err the answer to a wrong sign-in.
func (ms *MailServer) AnswerWrongPassword(err error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.authErr = err
}

// ReadMail is a mail as its reader sees it.
type ReadMail struct {
	Header  mail.Header
	Subject string // decoded
	Body    string // decoded from quoted-printable
}

// Read parses the mail: its headers, its Subject decoded and its body.
func (m SentMail) Read() (ReadMail, error) {
	msg, err := mail.ReadMessage(strings.NewReader(string(m.Data)))
	if err != nil {
		return ReadMail{}, err
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		return ReadMail{}, err
	}
	body := msg.Body
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	text, err := io.ReadAll(body)
	return ReadMail{Header: msg.Header, Subject: subject, Body: string(text)}, err
}

// selfSigned is a certificate for 127.0.0.1, made for the test, and a
// pool that trusts it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
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

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}
func (nopLogger) Println(...any)        {}

type mailSession struct {
	ms     *MailServer
	conn   *smtp.Conn
	signed bool
	mail   SentMail
}

func (s *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, password string) error {
		_, encrypted := s.conn.TLSConnectionState()
		s.ms.mu.Lock()
		defer s.ms.mu.Unlock()
		s.ms.auths = append(s.ms.auths, encrypted)
		if user != MailUser || password != MailPassword {
			return s.ms.authErr
		}
		s.signed = true
		return nil
	}), nil
}

func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error {
	s.mail = SentMail{From: from}
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
	s.mail.To = append(s.mail.To, to)
	return nil
}

func (s *mailSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.mail.Data = data
	s.ms.mu.Lock()
	s.ms.mails = append(s.ms.mails, s.mail)
	s.ms.mu.Unlock()
	return nil
}

func (s *mailSession) Reset()        { s.mail = SentMail{} }
func (s *mailSession) Logout() error { return nil }
