package notifytest

import (
	"encoding/json"
	"net/http"
	"testing"
)

// SlackToken is the secret part of the fake Slack's webhook URL.
const SlackToken = "T0001/B0001/abcdefghijklmnopqrstuvwx"

// SlackPath is the path of the fake Slack's one incoming webhook.
const SlackPath = "/services/" + SlackToken

// Slack starts a receiver that answers as Slack's incoming webhooks do:
// 200 "ok" to a message with a fallback text and blocks, 400
// invalid_payload to one without, 404 no_service at any path but
// SlackPath. The webhook's address is the receiver's URL + SlackPath.
func Slack(t testing.TB) *Receiver {
	t.Helper()
	return NewReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		var msg SlackMessage
		switch {
		case r.URL.Path != SlackPath:
			http.Error(w, "no_service", http.StatusNotFound)
		case r.Header.Get("Content-Type") != "application/json", json.Unmarshal(body, &msg) != nil, msg.Text == "", len(msg.Blocks) == 0:
			http.Error(w, "invalid_payload", http.StatusBadRequest)
		default:
			_, _ = w.Write([]byte("ok"))
		}
		return false
	})
}

// SlackMessage is an incoming webhook's message as a test reads it.
type SlackMessage struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks"`
}

// SlackBlock is a Block Kit block as a test reads it.
type SlackBlock struct {
	Type string `json:"type"`
	Text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"text"`
	Elements []struct {
		Type string          `json:"type"`
		Text json.RawMessage `json:"text"`
		URL  string          `json:"url"`
	} `json:"elements"`
}

// Slack reads the request's body as a Slack message.
func (r Request) Slack() (SlackMessage, error) {
	var m SlackMessage
	err := json.Unmarshal(r.Body, &m)
	return m, err
}
