package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// poster posts JSON to one URL, once per call: retrying is the caller's.
type poster struct {
	base
	url    string // expanded from the environment; kept in memory only
	header http.Header
	client *http.Client
}

func newPoster(b base, rawURL string, header http.Header, o options) *poster {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.rootCAs}
	return &poster{base: b, url: rawURL, header: header, client: &http.Client{
		Transport: t,
		// A redirect is a failure, as the Standard Webhooks spec asks:
		// following one would post the notification, and for Slack its
		// credential URL's answer, somewhere no one configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// reply is what a receiver answered: its status, the start of its body,
// and how long it asked to wait (Retry-After).
type reply struct {
	status     int
	body       string
	retryAfter time.Duration
}

// maxReply bounds what is read of an answer's body: a receiver that
// answers a megabyte does not fill memory, and the start says why.
const maxReply = 4 << 10

// post sends body once. An error is one that never reached an answer
// (no connection, no answer in time), in words, without the URL.
func (p *poster) post(ctx context.Context, body []byte, header http.Header) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		// The URL is not quoted: it may be the credential.
		return reply{}, p.fail(failure{permanent: true}, "the URL cannot be posted to: check alerts.channels.%s.url", p.name)
	}
	for k, vs := range p.header {
		req.Header[k] = vs
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "syncdesk")
	resp, err := p.client.Do(req)
	if err != nil {
		return reply{}, p.unreached(ctx, err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	// Read a little more, so that the connection can be used again.
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	return reply{status: resp.StatusCode, body: string(got), retryAfter: retryAfter(resp.Header, p.clock.Now())}, nil
}

// unreached words an attempt that got no answer. Only the innermost
// cause is quoted: an *url.Error holds the URL.
func (p *poster) unreached(ctx context.Context, err error) error {
	f, done := ended(ctx)
	if done && errors.Is(f.ctxErr, context.DeadlineExceeded) {
		return p.fail(f, "no answer within %v", p.timeout)
	}
	if done {
		return p.fail(f, "the send was called off")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return p.fail(failure{permanent: isCertificateError(err)}, "could not reach the receiver: %v", err)
}

// isCertificateError reports whether err is a certificate the system does
// not trust: someone must mend that, sending again will not.
func isCertificateError(err error) bool {
	var cv *tls.CertificateVerificationError
	return errors.As(err, &cv)
}

// classify turns an HTTP answer into nil or a failure, following the
// Standard Webhooks spec's advice on statuses: 2xx is delivered; a
// redirect needs the URL changed; 408, 429 and 5xx may pass; any other
// 4xx is the receiver's refusal, which sending again will not change.
// what is the answer in the kind's words.
func (p *poster) classify(r reply, what string) error {
	switch {
	case r.status >= 200 && r.status < 300:
		return nil
	case r.status >= 300 && r.status < 400:
		return p.fail(failure{permanent: true}, "the receiver answered %d, a redirect, which is not followed: set the new address in alerts.channels.%s.url", r.status, p.name)
	case r.status == http.StatusRequestTimeout || r.status == http.StatusTooManyRequests || r.status >= 500:
		return p.fail(failure{retryAfter: r.retryAfter}, "%s", what)
	}
	return p.fail(failure{permanent: true}, "%s", what)
}

// answer words an answer: its status and the start of its body, redacted.
func (p *poster) answer(r reply) string {
	s := strconv.Itoa(r.status) + " " + http.StatusText(r.status)
	if b := strings.TrimSpace(p.excerpt(r.body)); b != "" {
		s += ": " + b
	}
	return s
}

// retryAfter reads Retry-After, in seconds or as an HTTP date; an answer
// asking for more than a day is taken as a day.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(v); err == nil {
		d = time.Duration(min(secs, 86400)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), 24*time.Hour)
}
