package notify

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/syncdesk/syncdesk/sync/clock"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Option changes how channels send; the defaults suit production.
type Option func(*options)

type options struct {
	clock   clock.Clock
	rootCAs *x509.CertPool
}

// WithClock dates what is sent (webhook-timestamp, the e-mail's Date) by c.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithRootCAs trusts the certificates of pool in place of the system's,
// for receivers and mail servers whose certificate a private CA signed.
func WithRootCAs(pool *x509.CertPool) Option { return func(o *options) { o.rootCAs = pool } }

// New returns the channel cfg describes, named name as in the
// configuration. Config.Validate has checked cfg at start; New still
// refuses what it cannot send with, naming the setting the same way.
func New(name string, cfg config.AlertChannel, opts ...Option) (Channel, error) {
	o := options{clock: clock.Real{}}
	for _, opt := range opts {
		opt(&o)
	}
	timeout := cfg.SendTimeout()
	if timeout <= 0 {
		timeout = config.DefaultChannelTimeout
	}
	r := redact.New(nil)
	r.AddSecrets(cfg.Secrets()...)
	b := base{name: name, timeout: timeout, clock: o.clock, redact: r}
	switch cfg.Kind {
	case config.ChannelWebhook:
		return newWebhook(b, cfg, o)
	case config.ChannelSlack:
		return newSlack(b, cfg, o)
	case config.ChannelEmail:
		return newEmail(b, cfg, o)
	}
	return nil, fmt.Errorf("setting alerts.channels.%s.kind: %q is not webhook, slack or email", name, cfg.Kind)
}

// FromConfig returns every configured channel by name, or every reason
// one cannot be made.
func FromConfig(a config.Alerts, opts ...Option) (map[string]Channel, error) {
	out := make(map[string]Channel, len(a.Channels))
	var errs []error
	for _, name := range a.ChannelNames() {
		ch, err := New(name, a.Channels[name], opts...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = ch
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// base is what every kind of channel shares: its name, the bound on one
// attempt, its clock, and a redactor that knows its secrets.
type base struct {
	name    string
	timeout time.Duration
	clock   clock.Clock
	redact  *redact.Redactor
}

// attempt bounds one attempt by the channel's timeout.
func (b base) attempt(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.timeout)
}

// maxErrorText bounds an error's text: it is shown on a page and logged.
const maxErrorText = 600

// fail builds a send's error. Its text is written here, not wrapped from a
// cause: an *url.Error quotes the URL it posted to, and a Slack webhook's
// URL is its credential. Whatever the text quotes of a reply, every known
// secret of the channel is masked in it.
func (b base) fail(f failure, format string, a ...any) error {
	msg := b.redact.Known(fmt.Sprintf("alert channel %s: ", b.name) + fmt.Sprintf(format, a...))
	f.msg = b.redact.Excerpt(msg, maxErrorText)
	return &f
}

// excerpt is what an error quotes of a receiver's answer: redacted, cut
// short, on one line.
func (b base) excerpt(s string) string {
	return b.redact.TextPrefix(oneLine(s), maxExcerpt)
}

// maxExcerpt bounds what an error quotes of a receiver's answer.
const maxExcerpt = 200

// failure is a send's error in words (see base.fail): whether sending
// again may mend it, how long the receiver asked to wait, and the
// context's error when the context ended the attempt.
type failure struct {
	msg        string
	permanent  bool
	retryAfter time.Duration
	ctxErr     error
}

func (f *failure) Error() string { return f.msg }

// Unwrap lets errors.Is find ErrPermanent, and context.DeadlineExceeded
// or context.Canceled when the attempt ran out of time or was called off.
func (f *failure) Unwrap() []error {
	var out []error
	if f.permanent {
		out = append(out, ErrPermanent)
	}
	if f.ctxErr != nil {
		out = append(out, f.ctxErr)
	}
	return out
}

// RetryAfter is how long the receiver asked to be left alone before the
// next try (an HTTP Retry-After), or 0 when it said nothing.
func RetryAfter(err error) time.Duration {
	var f *failure
	if errors.As(err, &f) {
		return f.retryAfter
	}
	return 0
}

// ended is the failure of an attempt whose context is done: it ran out of
// the channel's time, or the caller called it off.
func ended(ctx context.Context) (failure, bool) {
	if err := ctx.Err(); err != nil {
		return failure{ctxErr: err}, true
	}
	return failure{}, false
}

// oneLine keeps a quoted reply from breaking the error onto lines.
func oneLine(s string) string {
	b := []rune(s)
	for i, c := range b {
		if c == '\r' || c == '\n' || c == '\t' {
			b[i] = ' '
		}
	}
	return string(b)
}

// cut shortens s to at most n runes, ending it with "…" when it was cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// eventTypes are the Standard Webhooks event types, and a state in one
// stable word, of each State.
var eventTypes = map[State]string{Opened: "opened", Repeated: "repeated", Resolved: "resolved"}

// checkMessage refuses a notification no channel can send: a bug in the
// caller, that sending it again cannot mend.
func (b base) checkMessage(m Message) error {
	if m.ID == "" {
		return b.fail(failure{permanent: true}, "the notification has no id")
	}
	for _, c := range m.ID {
		if c <= ' ' || c == 0x7f {
			return b.fail(failure{permanent: true}, "the notification's id %q holds a space or a control character", m.ID)
		}
	}
	if m.Title == "" { // every kind leads with it: a header, a Subject
		return b.fail(failure{permanent: true}, "the notification has no title")
	}
	if _, ok := eventTypes[m.State]; !ok {
		return b.fail(failure{permanent: true}, "the notification's state %q is not opened, still open or resolved", m.State)
	}
	return nil
}
