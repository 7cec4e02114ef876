package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/sync/config"
)

// email sends a notification over SMTP with the standard library's
// net/smtp: it speaks STARTTLS, implicit TLS (over a tls.Conn) and AUTH
// PLAIN, which is what submission servers take; its lack of contexts is
// made up for by the connection's deadline.
type email struct {
	base
	addr      string // host:port
	host      string
	implicit  bool   // TLS from the first byte
	startTLS  string // config.StartTLS…
	username  string // expanded; in memory only
	password  string
	from      *mail.Address
	to        []*mail.Address
	tlsConfig *tls.Config
	helloName string
}

func newEmail(b base, cfg config.AlertChannel, o options) (Channel, error) {
	bad := func(setting, format string, a ...any) error {
		return fmt.Errorf("setting alerts.channels.%s.%s: %s", b.name, setting, fmt.Sprintf(format, a...))
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, bad("from", "%q is not an e-mail address", cfg.From)
	}
	e := &email{base: b, host: cfg.Host, addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.SMTPPort())),
		implicit: cfg.TLS, startTLS: cfg.StartTLSMode(), from: from,
		username: cfg.Expanded(cfg.Username), password: cfg.Expanded(cfg.Password),
		tlsConfig: &tls.Config{ServerName: cfg.Host, MinVersion: tls.VersionTLS12, RootCAs: o.rootCAs},
		helloName: helloName()}
	for i, raw := range cfg.To {
		to, err := mail.ParseAddress(raw)
		if err != nil {
			return nil, bad(fmt.Sprintf("to[%d]", i), "%q is not an e-mail address", raw)
		}
		e.to = append(e.to, to)
	}
	if len(e.to) == 0 {
		return nil, bad("to", "an email channel needs at least one recipient")
	}
	return e, nil
}

// helloName is this host's name for EHLO, as servers expect one;
// "localhost" (net/smtp's default) when it has none that fits.
func helloName() string {
	name, err := os.Hostname()
	if err != nil || !hostName.MatchString(name) {
		return "localhost"
	}
	return name
}

var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$`)

// Send delivers m once, to every recipient or to none, within the
// channel's timeout.
func (e *email) Send(ctx context.Context, m Message) error {
	if err := e.checkMessage(m); err != nil {
		return err
	}
	ctx, cancel := e.attempt(ctx)
	defer cancel()
	msg := e.compose(m, e.clock.Now())
	c, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := e.secure(ctx, c); err != nil {
		return err
	}
	if err := e.signIn(ctx, c); err != nil {
		return err
	}
	if err := e.deliver(ctx, c, msg); err != nil {
		return err
	}
	_ = c.Quit() // the mail is accepted: a failed goodbye changes nothing
	return nil
}

// connect dials the server, bounded by ctx: the connection's deadline is
// the context's, and ending the context ends the connection's waits.
func (e *email) connect(ctx context.Context) (*smtp.Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.addr)
	if err != nil {
		return nil, e.smtpFail(ctx, "could not reach the mail server "+e.addr, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	// Called off early, the attempt's waits end at once; at the latest,
	// Send's cancel runs this on a connection it has closed, harmlessly.
	raw := conn // the TLS connection wrapped around it shares its deadline
	context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Now()) })
	if e.implicit {
		tc := tls.Client(conn, e.tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, e.smtpFail(ctx, "TLS with the mail server "+e.addr+" failed", err)
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, e.host)
	if err != nil {
		conn.Close()
		return nil, e.smtpFail(ctx, "the mail server "+e.addr+" did not greet", err)
	}
	if err := c.Hello(e.helloName); err != nil {
		c.Close()
		return nil, e.smtpFail(ctx, "the mail server "+e.addr+" refused the greeting", err)
	}
	return c, nil
}

// secure starts TLS as starttls asks: required refuses a server that does
// not offer it, before anything about the mail is said.
func (e *email) secure(ctx context.Context, c *smtp.Client) error {
	if e.implicit || e.startTLS == config.StartTLSOff {
		return nil
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		if e.startTLS == config.StartTLSRequired {
			return e.fail(failure{permanent: true}, "the mail server %s does not offer STARTTLS, and starttls: required sends nothing unencrypted: "+
				"have the server offer it, or set alerts.channels.%s.starttls: opportunistic", e.addr, e.name)
		}
		return nil
	}
	if err := c.StartTLS(e.tlsConfig); err != nil {
		return e.smtpFail(ctx, "STARTTLS with the mail server "+e.addr+" failed", err)
	}
	return nil
}

// signIn sends the password only over TLS, whatever the server offers.
func (e *email) signIn(ctx context.Context, c *smtp.Client) error {
	if e.username == "" {
		return nil
	}
	if _, encrypted := c.TLSConnectionState(); !encrypted {
		return e.fail(failure{permanent: true}, "the mail server %s does not offer STARTTLS, and the password is never sent unencrypted: "+
			"have the server offer it, or use tls: true", e.addr)
	}
	if ok, _ := c.Extension("AUTH"); !ok {
		return e.fail(failure{permanent: true}, "the mail server %s does not offer to sign in (AUTH): leave out username and password, or check the port", e.addr)
	}
	if err := c.Auth(smtp.PlainAuth("", e.username, e.password, e.host)); err != nil {
		return e.smtpFail(ctx, "the mail server refused to sign in as "+e.username, err)
	}
	return nil
}

// deliver names the sender and every recipient, then sends the message.
// A refused recipient sends the mail to no one, so that a retry does not
// send it twice to the others.
func (e *email) deliver(ctx context.Context, c *smtp.Client, msg []byte) error {
	if err := c.Mail(e.from.Address); err != nil {
		return e.smtpFail(ctx, "the mail server refused the sender "+e.from.Address, err)
	}
	for _, to := range e.to {
		if err := c.Rcpt(to.Address); err != nil {
			_ = c.Reset()
			return e.smtpFail(ctx, "the mail server refused the recipient "+to.Address, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return e.smtpFail(ctx, "the mail server refused the message", err)
	}
	if _, err := w.Write(msg); err != nil {
		return e.smtpFail(ctx, "sending the message failed", err)
	}
	if err := w.Close(); err != nil {
		return e.smtpFail(ctx, "the mail server refused the message", err)
	}
	return nil
}

// smtpFail words a failed step: a 5xx reply is a refusal sending again
// will not change; a 4xx reply, a lost connection or no answer in time
// may pass; an untrusted certificate needs a person.
func (e *email) smtpFail(ctx context.Context, what string, err error) error {
	if f, done := ended(ctx); done {
		if errors.Is(f.ctxErr, context.DeadlineExceeded) {
			return e.fail(f, "%s: no answer within %v", what, e.timeout)
		}
		return e.fail(f, "%s: the send was called off", what)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) { // the connection's deadline, the attempt's, may strike first
		return e.fail(failure{ctxErr: context.DeadlineExceeded}, "%s: no answer within %v", what, e.timeout)
	}
	var reply *textproto.Error
	if errors.As(err, &reply) {
		return e.fail(failure{permanent: reply.Code >= 500}, "%s (%d %s)", what, reply.Code, e.excerpt(reply.Msg))
	}
	return e.fail(failure{permanent: isCertificateError(err)}, "%s: %v", what, err)
}

// compose writes the message: plain text in words and a link, a Subject
// that says what is wrong, the notification's id as Message-ID (the same
// on every retry, so a mail client shows one mail), and Auto-Submitted
// (RFC 3834), so that no vacation reply answers it.
func (e *email) compose(m Message, now time.Time) []byte {
	var to []string
	for _, a := range e.to {
		to = append(to, a.String())
	}
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	header("From", e.from.String())
	header("To", strings.Join(to, ", "))
	header("Subject", subject(m.Headline()))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", messageID(m.ID, e.from.Address))
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	header("Auto-Submitted", "auto-generated")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(e.words(m)))
	_ = qp.Close()
	return b.Bytes()
}

// maxSubject bounds the title in a Subject, which must stay within a
// line's 998 characters once encoded (RFC 5322 2.1.1).
const maxSubject = 200

// subject is "[syncdesk] <title>", encoded where it is not ASCII and
// folded between encoded words, so that no line grows past the limit.
func subject(title string) string {
	enc := mime.QEncoding.Encode("utf-8", "[syncdesk] "+cut(oneLine(title), maxSubject))
	return strings.ReplaceAll(enc, "?= =?", "?=\r\n =?")
}

// words is the body: what is wrong, what to do, where to look.
func (e *email) words(m Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", m.Headline())
	if m.Text != "" {
		fmt.Fprintf(&b, "%s\n\n", m.Text)
	}
	if m.URL != "" {
		fmt.Fprintf(&b, "Open it in syncdesk: %s\n\n", m.URL)
	}
	fmt.Fprintf(&b, "%s: incident %d", stateWords[m.State], m.Incident)
	if m.Subject != "" {
		fmt.Fprintf(&b, " about %s", m.Subject)
	}
	if m.Rule != "" {
		fmt.Fprintf(&b, " (rule %s)", m.Rule)
	}
	fmt.Fprintf(&b, ", %s.\n\n-- \nSent by syncdesk to the alert channel %s.\n", m.At.UTC().Format("2 Jan 2006 15:04 UTC"), e.name)
	return b.String()
}

// messageID is <id@domain>, the domain the sender's. An id that is not a
// dot-atom (RFC 5322 3.6.4) is replaced by its hash, the same on a retry.
func messageID(id, from string) string {
	domain := from[strings.LastIndexByte(from, '@')+1:]
	if !dotAtom.MatchString(id) {
		sum := sha256.Sum256([]byte(id))
		id = "h" + hex.EncodeToString(sum[:16])
	}
	return "<" + id + "@" + domain + ">"
}

var dotAtom = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")
