package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox/verify"
)

// webhook posts a notification signed with the Standard Webhooks scheme
// (https://www.standardwebhooks.com, the spec at
// github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md):
// webhook-id is the notification's id, the same on every retry so that the
// receiver can drop a repeat; webhook-timestamp is the attempt's time;
// webhook-signature is "v1," and the base64 HMAC-SHA256 of
// "id.timestamp.body" under the whsec_ key. The spec asks that an id a
// sender's users control hold no "."; ours come from sync/alerts, and none
// is user input.
type webhook struct {
	*poster
	key []byte
}

func newWebhook(b base, cfg config.AlertChannel, o options) (Channel, error) {
	key, err := verify.StandardKey(cfg.Expanded(cfg.Secret))
	if err != nil {
		return nil, fmt.Errorf("setting alerts.channels.%s.secret: %w", b.name, err)
	}
	header := http.Header{}
	for k, v := range cfg.Headers {
		header.Set(k, cfg.Expanded(v))
	}
	return &webhook{poster: newPoster(b, cfg.Expanded(cfg.URL), header, o), key: key}, nil
}

// webhookEvent is the body: the spec's {type, timestamp, data}.
type webhookEvent struct {
	Type      string      `json:"type"`
	Timestamp time.Time   `json:"timestamp"`
	Data      webhookData `json:"data"`
}

// webhookData is the incident as the notification tells it.
type webhookData struct {
	Incident int64     `json:"incident"`
	Rule     string    `json:"rule"`
	Subject  string    `json:"subject"`
	State    string    `json:"state"`
	Title    string    `json:"title"`
	Text     string    `json:"text"`
	URL      string    `json:"url"`
	At       time.Time `json:"at"`
}

// body encodes m once: what is signed is what is sent, byte for byte.
func webhookBody(m Message) ([]byte, error) {
	state := eventTypes[m.State]
	return json.Marshal(webhookEvent{Type: "incident." + state, Timestamp: m.At.UTC(), Data: webhookData{
		Incident: m.Incident, Rule: m.Rule, Subject: m.Subject, State: state,
		Title: m.Title, Text: m.Text, URL: m.URL, At: m.At.UTC(),
	}})
}

// Send posts m once, signed, within the channel's timeout.
func (w *webhook) Send(ctx context.Context, m Message) error {
	if err := w.checkMessage(m); err != nil {
		return err
	}
	body, err := webhookBody(m)
	if err != nil {
		return w.fail(failure{permanent: true}, "the notification cannot be encoded: %v", err)
	}
	ctx, cancel := w.attempt(ctx)
	defer cancel()
	ts := strconv.FormatInt(w.clock.Now().Unix(), 10)
	h := http.Header{}
	h.Set("webhook-id", m.ID)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", verify.StandardSignature(w.key, m.ID, ts, body))
	r, err := w.post(ctx, body, h)
	if err != nil {
		return err
	}
	return w.classify(r, "the receiver answered "+w.answer(r))
}
