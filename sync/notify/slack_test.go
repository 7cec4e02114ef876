package notify_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/notify/notifytest"
)

func slackChannel(t *testing.T, url string) notify.Channel {
	t.Helper()
	ch, err := notify.New("chat", config.AlertChannel{Kind: "slack", URL: url})
	require.NoError(t, err)
	return ch
}

func slackSent(t *testing.T, rc *notifytest.Receiver) (string, []notifytest.SlackBlock) {
	t.Helper()
	got := rc.Requests()
	require.NotEmpty(t, got)
	msg, err := got[len(got)-1].Slack()
	require.NoError(t, err)
	return msg.Text, msg.Blocks
}

func TestASlackMessageIsLaidOutWithBlockKit(t *testing.T) {
	rc := notifytest.Slack(t)
	m := message()
	require.NoError(t, slackChannel(t, rc.URL+notifytest.SlackPath).Send(context.Background(), m))
	text, blocks := slackSent(t, rc)
	require.Equal(t, m.Title+": "+m.Text, text, "the fallback a notification shows")

	var types []string
	for _, b := range blocks {
		types = append(types, b.Type)
	}
	require.Equal(t, []string{"header", "section", "context", "actions"}, types)
	require.Equal(t, "plain_text", blocks[0].Text.Type)
	require.Equal(t, m.Title, blocks[0].Text.Text)
	require.Equal(t, "mrkdwn", blocks[1].Text.Type)
	require.Equal(t, m.Text, blocks[1].Text.Text)
	var ctx struct{ Type, Text string }
	require.NoError(t, json.Unmarshal(mustJSON(t, blocks[2].Elements[0]), &ctx))
	require.Equal(t, "mrkdwn", ctx.Type)
	require.Equal(t, "Opened · incident 12 · crm · 1 Dec 2026 10:14 UTC", ctx.Text)
	button := blocks[3].Elements[0]
	require.Equal(t, "button", button.Type)
	require.Equal(t, m.URL, button.URL)
	require.JSONEq(t, `{"type":"plain_text","text":"Open in syncdesk"}`, string(button.Text))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// Without the desk's address the page is a path, which a Slack button
// cannot carry: the path goes in the context line instead. Markup in a
// title pings no one.
func TestASlackMessageWithAPathAndMarkup(t *testing.T) {
	rc := notifytest.Slack(t)
	m := message()
	m.URL, m.Text, m.Subject = "/services/crm", "Ask <!channel> & check", ""
	require.NoError(t, slackChannel(t, rc.URL+notifytest.SlackPath).Send(context.Background(), m))
	text, blocks := slackSent(t, rc)
	require.Len(t, blocks, 3, "no button for a path")
	require.Equal(t, "Ask &lt;!channel&gt; &amp; check", blocks[1].Text.Text)
	require.Contains(t, text, "&lt;!channel&gt;")
	require.Contains(t, string(mustJSON(t, blocks[2].Elements[0])), "in syncdesk at /services/crm")

	long := message()
	long.Title = strings.Repeat("x", 400)
	require.NoError(t, slackChannel(t, rc.URL+notifytest.SlackPath).Send(context.Background(), long))
	_, blocks = slackSent(t, rc)
	require.Len(t, []rune(blocks[0].Text.Text), 150, "a header's limit")
}

func TestSlackFaultsSayWhetherSendingAgainMayHelp(t *testing.T) {
	for _, tc := range []struct {
		status    int
		body      string
		permanent bool
		words     string
	}{
		{400, "invalid_payload", true, "Slack could not read the message (Slack answered 400 Bad Request: invalid_payload)"},
		{403, "action_prohibited", true, "the Slack workspace forbids this webhook"},
		{404, "no_service", true, "the incoming webhook no longer exists: make a new one and set its URL in alerts.channels.chat.url"},
		{404, "channel_not_found", true, "the Slack channel no longer exists"},
		{410, "channel_is_archived", true, "the Slack channel is archived"},
		{429, "rate_limited", false, "Slack answered 429 Too Many Requests: rate_limited"},
		{500, "rollup_error", false, "Slack answered 500 Internal Server Error: rollup_error"},
		{503, "", false, "Slack answered 503 Service Unavailable"},
	} {
		rc := notifytest.NewReceiver(t, notifytest.Answer(tc.status, tc.body))
		err := slackChannel(t, rc.URL+notifytest.SlackPath).Send(context.Background(), message())
		requirePermanent(t, err, tc.permanent, tc.body)
		require.Contains(t, err.Error(), "alert channel chat: "+tc.words)
	}
	// The fake's own refusal of a wrong path.
	rc := notifytest.Slack(t)
	err := slackChannel(t, rc.URL+"/services/T0001/B0001/revoked").Send(context.Background(), message())
	requirePermanent(t, err, true)
	require.Contains(t, err.Error(), "no longer exists")
}
