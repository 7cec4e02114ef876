package alerts

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/notify"
	"github.com/syncdesk/syncdesk/sync/notify/notifytest"
)

// hookSecret signs the webhook channel's posts: "whsec_" and 32 bytes.
var hookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("alerts-receivers-test-secret-32b"))

// receivers are one real receiver per kind of channel.
type receivers struct {
	hook, slack *notifytest.Receiver
	mail        *notifytest.MailServer
}

// realChannels starts the receivers and returns the alerts' configuration
// with a channel to each, written as a user writes it (secrets as ${VAR}),
// and the channels made from it as main makes them.
func realChannels(t *testing.T) (receivers, config.Alerts, map[string]notify.Channel) {
	t.Helper()
	rc := receivers{hook: notifytest.Webhook(t, hookSecret), slack: notifytest.Slack(t),
		mail: notifytest.Mail(t, notifytest.MailOptions{StartTLS: true})}
	t.Setenv("ALERTS_TEST_HOOK_SECRET", hookSecret)
	t.Setenv("ALERTS_TEST_SLACK_URL", rc.slack.URL+notifytest.SlackPath)
	t.Setenv("ALERTS_TEST_SMTP_PASSWORD", notifytest.MailPassword)
	cfg := config.Alerts{Repeat: 2 * time.Minute, DeskURL: "https://desk.example.com", Channels: map[string]config.AlertChannel{
		"ops":  {Kind: "webhook", URL: rc.hook.URL + "/syncdesk", Secret: "${ALERTS_TEST_HOOK_SECRET}"},
		"chat": {Kind: "slack", URL: "${ALERTS_TEST_SLACK_URL}"},
		"mail": {Kind: "email", Host: "127.0.0.1", Port: rc.mail.Port, Username: notifytest.MailUser, Password: "${ALERTS_TEST_SMTP_PASSWORD}",
			From: "Syncdesk <syncdesk@example.com>", To: []string{"ops@example.com"}, StartTLS: "required"},
	}}
	// The webhook's signing time is the real clock's, as the library
	// checks it against its own; the incidents' times are the fake clock's.
	channels, err := notify.FromConfig(cfg, notify.WithRootCAs(rc.mail.Pool))
	require.NoError(t, err)
	return rc, cfg, channels
}

// webhookTypes are the event types of the verified webhook deliveries; it
// fails if any delivery was not verified.
func (rc receivers) webhookTypes(t *testing.T) []string {
	t.Helper()
	got := rc.hook.Requests()
	require.Len(t, rc.hook.Verified(), len(got), "every delivery verified by the Standard Webhooks library")
	var types []string
	for _, r := range got {
		e, err := r.Event()
		require.NoError(t, err)
		types = append(types, e.Type)
	}
	return types
}

// sent checks that each receiver got want, in order.
func (rc receivers) sent(t *testing.T, want []notify.State, why string) {
	t.Helper()
	var types []string
	for _, s := range want {
		types = append(types, eventTypes[s])
	}
	require.Equal(t, types, rc.webhookTypes(t), "webhook: %s", why)
	require.Len(t, rc.slack.Requests(), len(want), "slack: %s", why)
	mails, _ := rc.mail.Sent()
	require.Len(t, mails, len(want), "mail: %s", why)
}

// The acceptance of the alert rules against real receivers: for every
// rule, a webhook receiver verifying the Standard Webhooks signature with
// the official library, a fake Slack and an SMTP server get the incident
// once when it opens, once more after the repeat interval, and "resolved"
// once its condition clears, each naming the incident as its reader needs.
func TestEachRuleReachesRealReceivers(t *testing.T) {
	for _, tc := range ruleCases {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				rc, cfg, channels := realChannels(t)
				b := setupChannels(t, db, cfg, channels)
				incident := driveRule(t, b, tc, rc.sent)
				states := []notify.State{notify.Opened, notify.Repeated, notify.Resolved}
				titles := rc.checkWebhook(t, tc, incident, states)
				rc.checkSlack(t, titles, states)
				rc.checkMail(t, tc, incident, titles, states)
			})
		})
	}
}

// eventTypes are the webhook's event types, by state.
var eventTypes = map[notify.State]string{notify.Opened: "incident.opened", notify.Repeated: "incident.repeated", notify.Resolved: "incident.resolved"}

// stateWords are how a Slack message and a mail say where an incident stands.
var stateWords = map[notify.State]string{notify.Opened: "Opened", notify.Repeated: "Still open", notify.Resolved: "Resolved"}

// headline is how a mail's Subject and a Slack header lead: a notice that
// the incident is over, or still open, says so before its title, so that it
// does not read like a new alarm.
func headline(title string, state notify.State) string {
	if state == notify.Opened {
		return title
	}
	return stateWords[state] + ": " + title
}

// checkWebhook checks the webhook's events and returns their titles.
func (rc receivers) checkWebhook(t *testing.T, tc ruleCase, incident int64, states []notify.State) []string {
	t.Helper()
	ids := map[string]bool{}
	var titles []string
	for i, r := range rc.hook.Verified() {
		require.Equal(t, "/syncdesk", r.Path)
		ids[r.Header.Get("webhook-id")] = true
		e, err := r.Event()
		require.NoError(t, err)
		require.Equal(t, float64(incident), e.Data["incident"])
		require.Equal(t, tc.rule, e.Data["rule"])
		require.Equal(t, tc.subject, e.Data["subject"])
		require.Equal(t, eventTypes[states[i]], e.Type)
		require.Equal(t, strings.TrimPrefix(e.Type, "incident."), e.Data["state"])
		require.NotEmpty(t, e.Data["title"])
		require.Contains(t, e.Data["url"], "https://desk.example.com/")
		titles = append(titles, e.Data["title"].(string))
	}
	require.Len(t, ids, len(states), "each notification its own webhook-id")
	require.Contains(t, titles[0], tc.title, "the opening names what is wrong; a repeat says how it stands now")
	return titles
}

func (rc receivers) checkSlack(t *testing.T, titles []string, states []notify.State) {
	t.Helper()
	for i, r := range rc.slack.Requests() {
		m, err := r.Slack()
		require.NoError(t, err)
		require.Contains(t, m.Text, headline(titles[i], states[i]), "the fallback text names it")
		require.NotEmpty(t, m.Blocks)
		require.Equal(t, "header", m.Blocks[0].Type)
		require.Equal(t, headline(titles[i], states[i]), m.Blocks[0].Text.Text)
		var context string
		for _, bl := range m.Blocks {
			if bl.Type == "context" {
				context = string(bl.Elements[0].Text)
			}
		}
		require.Contains(t, context, stateWords[states[i]])
	}
}

func (rc receivers) checkMail(t *testing.T, tc ruleCase, incident int64, titles []string, states []notify.State) {
	t.Helper()
	mails, auths := rc.mail.Sent()
	require.Equal(t, []bool{true, true, true}, auths, "each signed in over STARTTLS")
	for i, sent := range mails {
		require.Equal(t, []string{"ops@example.com"}, sent.To)
		m, err := sent.Read()
		require.NoError(t, err)
		require.Equal(t, "[syncdesk] "+headline(titles[i], states[i]), m.Subject)
		require.Contains(t, m.Body, titles[i])
		require.Contains(t, m.Body, "Open it in syncdesk: https://desk.example.com/")
		require.Contains(t, m.Body, fmt.Sprintf("%s: incident %d about %s (rule %s)", stateWords[states[i]], incident, tc.subject, tc.rule))
	}
}
