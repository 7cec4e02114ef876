package connector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Call is what one outgoing request did: the attempt log's row, before the
// engine adds who and when.
type Call struct {
	Operation      string // e.g. deal.create
	IdempotencyKey string
	HTTPCode       int
	Duration       time.Duration
	Class          Class
	Ambiguous      bool
	RetryAfter     time.Duration
	// Quota: the provider refused because the service's allowance for a
	// period is spent (config.Answer.Quota): not the link's failure, so
	// its attempts are not used up; it goes again after RetryAfter.
	Quota bool
	// Held: the answer is one of the service's answers that mean "later"
	// (config.Answer): the provider is up and asks to wait, which says
	// nothing of whether it is down, as a 429 says nothing.
	Held bool
	// Checked is a call this one made to read its own answer: a
	// conflict's lookup of our key (see adoptConflict). It is an attempt
	// of its own in the log.
	Checked    *Call
	ExternalID string   // the provider's id of the object created, updated or found
	Found      []string // lookup: the ids of every object carrying the key
	Error      string   // a short reason in words, redacted
	Request    string   // redacted excerpt
	Response   string   // redacted excerpt
	// Unsent: the request never left: its wait for the service's pace was
	// cut short by our own stop, or its ready check (WithReady) failed. It
	// says nothing of the provider, and is no attempt.
	Unsent bool
}

// Page is one page of a provider's objects.
type Page struct {
	Items      []map[string]any
	NextCursor string
}

// Gate paces the calls to one service (sync/ratelimit's Limiter is one).
// Wait blocks until a request may go; done, called once with the answer
// (nil when none came), lets the gate learn from the provider's headers.
// Hold holds every call to the service for d, for an answer the service's
// configuration reads (config.Answer), reason saying why in words. HeldFor
// says how much longer every call is held (0: not held).
type Gate interface {
	Wait(ctx context.Context) (done func(*http.Response), err error)
	Hold(d time.Duration, reason string)
	HeldFor() time.Duration
}

// maxBody bounds what is read of a provider's answer.
const maxBody = 4 << 20

// excerptLen bounds the request and response excerpts in the attempt log.
const excerptLen = 2048

// excerptBody bounds what is redacted of a body for an excerpt: enough to
// fill one even when masks shorten what they hide, and no more, so that an
// excerpt of a body of megabytes costs what one of kilobytes does.
const excerptBody = 4 * excerptLen

// errorBody bounds what is redacted of an error answer for the error column.
const errorBody = 1024

// HTTP is the connector for any HTTP provider, driven by its config.Service:
// bodies in JSON or form encoding, built by the objects' mappings. Safe for
// concurrent use.
type HTTP struct {
	name    string
	svc     config.Service
	objects map[string]object
	answers []answerRule
	headers http.Header
	creds   *Credentials
	gate    Gate
	client  *http.Client
	redact  *redact.Redactor
	now     func() time.Time
}

// NewHTTP builds the connector of a service. Headers' ${VAR} references are
// expanded here, once; the values stay in memory only, and r learns them
// (with the service's other secrets, see config.Service.Secrets, and every
// token fetched later: NewCredentials tells it), so that a provider quoting
// a credential back has it masked wherever r redacts.
func NewHTTP(name string, svc config.Service, r *redact.Redactor, transport http.RoundTripper) *HTTP {
	h := svc.ExpandedHeaders()
	if transport == nil {
		transport = &http.Transport{MaxIdleConnsPerHost: 128, IdleConnTimeout: 90 * time.Second,
			ResponseHeaderTimeout: svc.Timeout}
	}
	c := &HTTP{name: name, svc: svc, headers: h, redact: r, now: time.Now, objects: map[string]object{}, answers: answerRules(svc.Answers),
		client: &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect on a write is the provider's problem to report, not ours to follow
		}}}
	for typ, o := range svc.Objects {
		c.objects[typ] = prepare(name, typ, o)
	}
	c.creds = NewCredentials(svc, &http.Client{Transport: transport, Timeout: svc.Timeout}, r)
	return c
}

// WithGate paces the connector's calls by g; nil leaves them unpaced.
func (c *HTTP) WithGate(g Gate) *HTTP {
	c.gate = g
	return c
}

// HeldFor says how much longer every call to the service is held by its
// gate (Gate.HeldFor); 0 without a gate.
func (c *HTTP) HeldFor() time.Duration {
	if c.gate == nil {
		return 0
	}
	return c.gate.HeldFor()
}

// WithTracer makes a span of each of the connector's HTTP calls, tokens
// fetched included, under the span of the send that makes it. No trace
// context goes to the provider: its systems are not ours to join. The span
// holds the call's URL, query and all; the exporter's scrubbing drops the
// query (sync/tracing), where every span passes.
// A nil tp leaves the calls untraced.
func (c *HTTP) WithTracer(tp trace.TracerProvider) *HTTP {
	if tp == nil {
		return c
	}
	opts := []otelhttp.Option{otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider())}
	c.client.Transport = otelhttp.NewTransport(c.client.Transport, opts...)
	c.creds.client = &http.Client{Transport: otelhttp.NewTransport(c.creds.client.Transport, opts...), Timeout: c.creds.client.Timeout}
	return c
}

// request is one call to make: the operation's name for the attempt log,
// the method and the URL's path and query (filled in), and the body.
type request struct {
	op, method, target string
	body               []byte
	ctype              string
	extra              http.Header
	// secrets is what holds the record's secrets, which the redactor masks
	// in what is sent and what comes back: the body itself when it is the
	// payload with our key, else the payload the mapping read (a password
	// is known by its field's name there, whatever the body calls it).
	secrets []byte
}

// do sends one request and classifies what came back. The request body is
// deliberately not replayable: Go's transport silently re-sends a request
// that has an Idempotency-Key header when a reused connection drops, and
// then one logged attempt would hide two sends. Without GetBody it cannot,
// so every send is one attempt in the log.
func (c *HTTP) do(ctx context.Context, rq request) (Call, answer) {
	done := func(*http.Response) {}
	if c.gate != nil {
		// The wait for the provider's rate is ours, not the provider's: it
		// does not count against the call's timeout.
		var err error
		if done, err = c.gate.Wait(ctx); err != nil {
			return Call{Operation: rq.op, Class: Temporary, Unsent: true, Error: "stopped while waiting for the service's rate limit"}, answer{}
		}
	}
	if err := ready(ctx); err != nil {
		done(nil)
		return Call{Operation: rq.op, Class: Temporary, Unsent: true, Error: err.Error()}, answer{}
	}
	call, a := c.send(ctx, rq)
	done(a.res)
	return call, a
}

type readyKey struct{}

// WithReady returns ctx carrying ready, which a call made with it runs
// after its wait for the service's pace, right before it is sent. A call
// whose ready fails is not sent (Call.Unsent, its error the call's). The
// engine checks there that the link is still its own to send: a wait can
// last longer than the lease it claimed the link with. Like
// net/http/httptrace's hooks, it is one call's, not a dependency of the
// connector's, and so travels with the call's context.
func WithReady(ctx context.Context, ready func(context.Context) error) context.Context {
	return context.WithValue(ctx, readyKey{}, ready)
}

// ready runs the ready check ctx carries, if any.
func ready(ctx context.Context) error {
	if f, ok := ctx.Value(readyKey{}).(func(context.Context) error); ok {
		return f(ctx)
	}
	return nil
}

// answer is what came back of a call: the response's head (its body
// closed), the body as read and decoded.
type answer struct {
	res     *http.Response
	raw     []byte
	decoded any
}

// send makes one call; see do.
func (c *HTTP) send(ctx context.Context, rq request) (Call, answer) {
	call := Call{Operation: rq.op}
	red := c.redact
	if rq.secrets != nil {
		red = red.ForPayload(rq.secrets)
	}
	ctx, cancel := context.WithTimeout(ctx, c.svc.Timeout)
	defer cancel()
	var wrote bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { wrote = i.Err == nil },
	})
	req, err := http.NewRequestWithContext(ctx, rq.method, rq.target, nil)
	if err != nil {
		call.Class, call.Error = Permanent, "bad request URL: "+red.Text(err.Error())
		return call, answer{}
	}
	for k, v := range c.headers {
		req.Header[k] = v
	}
	for k, v := range rq.extra {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "syncdesk")
	if rq.body != nil {
		req.Header.Set("Content-Type", rq.ctype)
		req.Body = io.NopCloser(bytes.NewReader(rq.body))
		req.ContentLength = int64(len(rq.body))
	}
	token, err := c.creds.Apply(ctx, req)
	if err != nil {
		call.Class, call.Error = authFailure(err, red)
		return call, answer{}
	}
	call.Request = Excerpt(red, req.Method+" "+req.URL.RequestURI(), req.Header, rq.body)
	keyed := c.svc.IdempotencyHeader != "" && req.Header.Get(c.svc.IdempotencyHeader) != ""

	start := c.now()
	res, err := c.client.Do(req)
	call.Duration = c.now().Sub(start)
	if err != nil {
		call.Class, call.Ambiguous = Classify(0, err, wrote, keyed)
		call.Error = red.Text(Describe(err, wrote, c.svc.Timeout))
		return call, answer{}
	}
	defer res.Body.Close()
	raw, readErr := io.ReadAll(io.LimitReader(res.Body, maxBody))
	call.HTTPCode = res.StatusCode
	call.Class, call.Ambiguous = Classify(res.StatusCode, nil, true, keyed)
	call.Response = Excerpt(red, res.Proto+" "+res.Status, res.Header, raw)
	if call.Class == OK && readErr != nil {
		// The provider said yes but the body was cut: the object exists, its id is unknown.
		call.Class, call.Ambiguous = Temporary, true
		call.Error = "the answer was cut off; whether it took effect is unknown"
		return call, answer{res: res, raw: raw}
	}
	var decoded any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&decoded)
	if call.Class != OK {
		call.RetryAfter = RetryAfter(res.Header.Get("Retry-After"), c.now(), c.svc.Retry.Max)
		msg := fmt.Sprintf("HTTP %d: %s", res.StatusCode, providerMessage(decoded, raw))
		if rule, ok := readAnswer(c.answers, res.StatusCode, raw); ok {
			msg = c.hold(&call, rule, res, providerMessage(decoded, raw))
		}
		call.Error = red.Excerpt(red.TextPrefix(msg, errorBody), 300)
	}
	if res.StatusCode == http.StatusUnauthorized && token != "" {
		// An expired token, most likely: it is dropped (once, however
		// many calls saw it refused) and the next attempt fetches another.
		// Nothing was done with a refused request, so the attempt is
		// retried at once rather than failing the link.
		c.creds.Refused(token)
		call.Class, call.Ambiguous, call.RetryAfter = Temporary, false, time.Millisecond
		call.Error = "the provider refused the access token (" + call.Error + "); a new token is fetched for the next attempt"
	}
	return call, answer{res: res, raw: raw, decoded: decoded}
}

// maxAnswerWait bounds a Retry-After on an answer the service reads as a
// spent allowance (config's answers are held at most a day too).
const maxAnswerWait = 24 * time.Hour

// hold applies one of the service's answers to call: temporary, nothing
// done, sent again after the answer's hold or its Retry-After, whichever is
// longer (an attempt that counts waits no longer than retry.max), and every
// call to the service held as long, all instances together. It returns the
// call's error in words, the provider's own (said) after ours.
func (c *HTTP) hold(call *Call, rule answerRule, res *http.Response, said string) string {
	call.Class, call.Ambiguous, call.Quota, call.Held = Temporary, false, rule.Quota, true
	d := max(rule.Hold, RetryAfter(res.Header.Get("Retry-After"), c.now(), maxAnswerWait))
	if !rule.Quota {
		d = min(d, c.svc.Retry.Max)
	}
	call.RetryAfter = d
	means := rule.Means
	if means == "" {
		means = "the provider asks to wait"
	}
	if c.gate != nil && d > 0 {
		c.gate.Hold(d, strings.TrimSpace(fmt.Sprintf("%d %s", res.StatusCode, http.StatusText(res.StatusCode)))+": "+means)
	}
	return fmt.Sprintf("HTTP %d: %s; sent again in %v (%s)", res.StatusCode, means, d, said)
}

// authFailure puts a failure to obtain credentials in words.
func authFailure(err error, red *redact.Redactor) (Class, string) {
	var ae *AuthError
	if errors.As(err, &ae) && ae.Permanent {
		return Permanent, red.Text(ae.Error())
	}
	return Temporary, red.Text(err.Error())
}

// Excerpt renders a request or response for the attempt log, redacted first
// and cut after, so that a cut can never expose half a secret to the
// patterns. Of a long body only the first excerptBody bytes are redacted,
// in a way that is safe at the cut (see redact.JSONPrefix).
func Excerpt(r *redact.Redactor, line string, h http.Header, body []byte) string {
	var b strings.Builder
	b.WriteString(r.Text(line))
	b.WriteString("\n")
	b.WriteString(r.Headers(h))
	if len(body) > 0 {
		b.WriteString("\n\n")
		b.Write(r.JSONPrefix(body, excerptBody))
	}
	return r.Excerpt(b.String(), excerptLen)
}
