package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/syncdesk/syncdesk/sync/config"
)

// slack posts to a Slack incoming webhook, or a Slack-compatible one
// (Mattermost, Rocket.Chat, …): {"text": fallback, "blocks": […]}, laid
// out with Block Kit (https://api.slack.com/reference/block-kit/blocks):
// a header with the title, a section with what to do, a context line with
// the incident, and a button to the page when the desk's address is known.
// Slack answers 200 "ok", or a status and one word saying why
// (https://api.slack.com/messaging/webhooks#handling_errors).
type slack struct {
	*poster
}

func newSlack(b base, cfg config.AlertChannel, o options) (Channel, error) {
	return &slack{poster: newPoster(b, cfg.Expanded(cfg.URL), nil, o)}, nil
}

// Block Kit's limits on one text: a header's plain text, a section's text,
// a button's label and URL, and the message's own text.
const (
	maxHeader  = 150
	maxSection = 3000
	maxURL     = 3000
	maxText    = 4000
)

type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type string     `json:"type"`
	Text *slackText `json:"text,omitempty"`
	// Elements are a context's texts (slackText) or an actions' buttons.
	Elements []any `json:"elements,omitempty"`
}

type slackButton struct {
	Type string    `json:"type"` // button
	Text slackText `json:"text"`
	URL  string    `json:"url"`
}

type slackText struct {
	Type string `json:"type"` // plain_text or mrkdwn
	Text string `json:"text"`
}

// mrkdwn escapes what Slack's mrkdwn reads as markup: the three
// characters its docs ask to escape (&, <, >), so a title holding
// "<!channel>" pings no one.
var mrkdwn = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// stateWords say where the incident stands, for people.
var stateWords = map[State]string{Opened: "Opened", Repeated: "Still open", Resolved: "Resolved"}

func slackBody(m Message) ([]byte, error) {
	about := fmt.Sprintf("%s · incident %d", stateWords[m.State], m.Incident)
	if m.Subject != "" {
		about += " · " + m.Subject
	}
	about += " · " + m.At.UTC().Format("2 Jan 2006 15:04 UTC")
	link, absolute := pageLink(m.URL)
	if link != "" && !absolute {
		about += " · in syncdesk at " + link // Slack takes no relative link
	}
	text := m.Headline()
	if m.Text != "" {
		text += ": " + m.Text
	}
	msg := slackMessage{Text: cut(mrkdwn.Replace(text), maxText), Blocks: []slackBlock{
		{Type: "header", Text: &slackText{"plain_text", cut(m.Headline(), maxHeader)}},
	}}
	if m.Text != "" {
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "section", Text: &slackText{"mrkdwn", cut(mrkdwn.Replace(m.Text), maxSection)}})
	}
	msg.Blocks = append(msg.Blocks, slackBlock{Type: "context", Elements: []any{slackText{"mrkdwn", cut(mrkdwn.Replace(about), maxSection)}}})
	if absolute {
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "actions", Elements: []any{
			slackButton{Type: "button", Text: slackText{"plain_text", "Open in syncdesk"}, URL: link},
		}})
	}
	return json.Marshal(msg)
}

// pageLink is the page's link, and whether it is an absolute http(s) URL
// that a button may carry.
func pageLink(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return "", false
	}
	return raw, (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && len(raw) <= maxURL
}

// slackReasons word Slack's answers that need a person.
var slackReasons = map[string]string{
	"invalid_payload":     "Slack could not read the message",
	"invalid_blocks":      "Slack could not lay out the message",
	"no_service":          "the incoming webhook no longer exists: make a new one and set its URL in alerts.channels.{name}.url",
	"no_team":             "the Slack workspace no longer exists",
	"invalid_token":       "the incoming webhook's URL is no longer valid: make a new one and set it in alerts.channels.{name}.url",
	"channel_not_found":   "the Slack channel no longer exists",
	"channel_is_archived": "the Slack channel is archived",
	"action_prohibited":   "the Slack workspace forbids this webhook to post here",
}

// Send posts m once within the channel's timeout.
func (s *slack) Send(ctx context.Context, m Message) error {
	if err := s.checkMessage(m); err != nil {
		return err
	}
	body, err := slackBody(m)
	if err != nil {
		return s.fail(failure{permanent: true}, "the notification cannot be encoded: %v", err)
	}
	ctx, cancel := s.attempt(ctx)
	defer cancel()
	r, err := s.post(ctx, body, nil)
	if err != nil {
		return err
	}
	what := "Slack answered " + s.answer(r)
	if reason, ok := slackReasons[strings.TrimSpace(r.body)]; ok {
		what = strings.ReplaceAll(reason, "{name}", s.name) + " (Slack answered " + s.answer(r) + ")"
	}
	return s.classify(r, what)
}
