package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/syncdesk/syncdesk/sync/clock"
)

// WebhookConfig says where and how a provider sends webhooks about its own
// changes. Only URL and Secret are required.
type WebhookConfig struct {
	// URL receives every event as a POST.
	URL string
	// Secret signs the deliveries: for the payment provider (Stripe scheme)
	// the key as-is; for the CRM (Standard Webhooks) "whsec_<base64>", see
	// NewStandardSecret.
	Secret string
	// DuplicateRate is the chance, in [0,1], that a delivered event is
	// delivered once more a moment later, with the same id and body.
	DuplicateRate float64
	// MaxAttempts bounds one delivery, the first attempt included. Default 8.
	MaxAttempts int
	// Backoff is the delay before the first retry; it doubles with every
	// retry up to 30s. Default 500ms. A duplicate waits up to one Backoff.
	Backoff time.Duration
	// Client makes the POSTs. Default: a 10s timeout, redirects not followed
	// (as Stripe does), and a transport of its own that Close shuts.
	Client *http.Client
	// Rand draws duplicates and their delay; the sender guards it, so it must
	// not be used elsewhere. Default: randomly seeded PCG.
	Rand *rand.Rand
	// Now stamps events and signatures. Default time.Now.
	Now func() time.Time
}

// WebhookStats counts one sender's work since SendWebhooks.
type WebhookStats struct {
	Events     int // events emitted while sending was on
	Sent       int // POSTs made: first attempts, retries and duplicates
	Delivered  int // events acknowledged with a 2xx, once each
	Failed     int // events given up after MaxAttempts
	Duplicates int // second deliveries acknowledged with a 2xx
	Retries    int // attempts after the first, duplicates' included
}

const (
	maxBackoff      = 30 * time.Second
	hookConcurrency = 8 // POSTs in flight at once per provider
)

// hookState is the provider's side of webhooks; the provider's mutex guards it.
type hookState struct {
	sender *webhooks // nil until SendWebhooks; kept after Close for its stats
	run    string    // makes event ids unique across provider instances (demo restarts)
	seq    int
}

// event is one change to announce; its id and body never change, whatever
// the number of deliveries.
type event struct {
	id   string
	body []byte
}

// webhooks delivers one provider's events. Each event gets a goroutine that
// lives through its retries and duplicate; slots bound the POSTs in flight,
// so a goroutine waiting out a backoff holds no connection.
type webhooks struct {
	cfg       WebhookConfig
	scheme    hookScheme
	key       []byte
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	slots     chan struct{}
	transport *http.Transport // our own, closed by stop; nil with a given Client

	mu      sync.Mutex // guards everything below, and cfg.Rand
	stopped bool
	pending int
	idle    chan struct{} // closed whenever pending is 0
	stats   WebhookStats
}

// SendWebhooks turns webhooks on, or reconfigures them: a previous sender is
// stopped first and its pending deliveries dropped. Events carry ids unique
// to this provider, so a receiver's dedup sees no false duplicates.
func (p *Provider) SendWebhooks(cfg WebhookConfig) error {
	s, err := newWebhooks(p.spec.events, cfg)
	if err != nil {
		return fmt.Errorf("%s webhooks: %w", p.spec.collection, err)
	}
	p.mu.Lock()
	old := p.hooks.sender
	p.hooks.sender = s
	if p.hooks.run == "" {
		p.hooks.run = fmt.Sprintf("%08x", rand.Uint32())
	}
	p.mu.Unlock()
	if old != nil {
		old.stop()
	}
	return nil
}

// Close stops webhook delivery: POSTs in flight are cancelled, retries and
// duplicates not yet made are dropped, later changes send nothing. It
// returns once every delivery goroutine has ended. Safe to call twice or
// without SendWebhooks.
func (p *Provider) Close() {
	if s := p.sender(); s != nil {
		s.stop()
	}
}

// Flush waits until every event emitted so far is done with (delivered,
// duplicated or given up), or until ctx ends.
func (p *Provider) Flush(ctx context.Context) error {
	s := p.sender()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush %s webhooks: %w", p.spec.collection, ctx.Err())
	}
}

// WebhookStats returns the counters of the current (or last) sender.
func (p *Provider) WebhookStats() WebhookStats {
	s := p.sender()
	if s == nil {
		return WebhookStats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (p *Provider) sender() *webhooks {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hooks.sender
}

// newWebhooks validates cfg, fills its defaults and starts nothing yet:
// goroutines start with the first event.
func newWebhooks(scheme hookScheme, cfg WebhookConfig) (*webhooks, error) {
	if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("URL %q is not an http(s) URL", cfg.URL)
	}
	key, err := scheme.key(cfg.Secret)
	if err != nil {
		return nil, err
	}
	s := &webhooks{scheme: scheme, key: key, slots: make(chan struct{}, hookConcurrency), idle: make(chan struct{})}
	close(s.idle)
	s.cfg = s.withDefaults(cfg)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

func (s *webhooks) withDefaults(cfg WebhookConfig) WebhookConfig {
	cfg.DuplicateRate = min(max(cfg.DuplicateRate, 0), 1)
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	if cfg.Client == nil {
		s.transport = http.DefaultTransport.(*http.Transport).Clone()
		cfg.Client = &http.Client{Timeout: 10 * time.Second, Transport: s.transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// enqueue starts the delivery of ev; after stop it drops ev. The WaitGroup
// is added to under the mutex that stop takes first, so no Add races Wait.
func (s *webhooks) enqueue(ev event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stats.Events++
	if s.pending == 0 {
		s.idle = make(chan struct{})
	}
	s.pending++
	s.wg.Add(1)
	go s.deliver(ev)
}

func (s *webhooks) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
}

// deliver sends ev until acknowledged or given up, then maybe once more.
func (s *webhooks) deliver(ev event) {
	defer s.wg.Done()
	defer s.finish()
	if !s.send(ev, false) {
		return
	}
	if delay, again := s.drawDuplicate(); again && clock.Sleep(s.ctx, delay) {
		s.send(ev, true)
	}
}

func (s *webhooks) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending--; s.pending == 0 {
		close(s.idle)
	}
}

// drawDuplicate decides whether a delivered event goes out again, and after
// how long (under one Backoff, so it lands among the events that follow).
func (s *webhooks) drawDuplicate() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Rand.Float64() >= s.cfg.DuplicateRate {
		return 0, false
	}
	return time.Duration(s.cfg.Rand.Int64N(int64(s.cfg.Backoff))), true
}

// send makes up to MaxAttempts POSTs of ev, backing off between them; it
// reports whether one was answered with a 2xx. Close cuts it short.
func (s *webhooks) send(ev event, duplicate bool) bool {
	for attempt := 1; attempt <= s.cfg.MaxAttempts; attempt++ {
		if attempt > 1 {
			if !clock.Sleep(s.ctx, backoff(s.cfg.Backoff, attempt-1)) {
				return false
			}
			s.count(func(st *WebhookStats) { st.Retries++ })
		}
		err := s.post(ev)
		switch {
		case err == nil && duplicate:
			s.count(func(st *WebhookStats) { st.Duplicates++ })
			return true
		case err == nil:
			s.count(func(st *WebhookStats) { st.Delivered++ })
			return true
		case s.ctx.Err() != nil:
			return false
		}
	}
	if !duplicate { // a duplicate that fails leaves the event delivered
		s.count(func(st *WebhookStats) { st.Failed++ })
	}
	return false
}

// errNot2xx is an answer that does not end a delivery.
var errNot2xx = errors.New("webhook answered with a non-2xx status")

// post makes one signed POST of ev, freshly stamped.
func (s *webhooks) post(ev event) error {
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(ev.body))
	if err != nil {
		return fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "syncdesk-sandbox-webhooks/1")
	s.scheme.sign(req.Header, s.key, ev.id, ev.body, s.cfg.Now())
	s.count(func(st *WebhookStats) { st.Sent++ })
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook POST: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: %d", errNot2xx, resp.StatusCode)
	}
	return nil
}

func (s *webhooks) count(change func(*WebhookStats)) {
	s.mu.Lock()
	change(&s.stats)
	s.mu.Unlock()
}

// backoff is the delay before retry n (1 for the first): base doubled n-1
// times, at most 30s.
func backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}
