package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAlertValuesNameTheSetting(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"rules: {failed_links: {over: -1}}", "setting alerts.rules.failed_links.over: must be a number between 1 and 100000000, got -1"},
		{"rules: {failed_links: {rise: -3}}", "setting alerts.rules.failed_links.rise: must be a number between 1 and 100000000, got -3"},
		{"rules: {failed_links: {within: 10s}}", "setting alerts.rules.failed_links.within: must be a duration between 1m and 168h such as 15m, got 10s"},
		{"rules: {service_paused: {after: -5m}}", "setting alerts.rules.service_paused.after: must be a duration between 1m and 168h"},
		{"rules: {stuck_queue: {after: 200h}}", "setting alerts.rules.stuck_queue.after: must be a duration between 1m and 168h"},
		{"rules: {refused_webhooks: {over: -2}}", "setting alerts.rules.refused_webhooks.over: must be a number"},
		{"rules: {refused_webhooks: {within: 30s}}", "setting alerts.rules.refused_webhooks.within: must be a duration"},
		{"rules: {task_failing: {times: -1}}", "setting alerts.rules.task_failing.times: must be between 1 and 1000 failed runs in a row, got -1"},
		{"every: 100ms", "setting alerts.every: must be a duration between 1s and 1h such as 30s, got 100ms"},
		{"repeat: 5s", "setting alerts.repeat: must be a duration between 1m and 168h such as 1h, got 5s"},
		{"desk_url: ftp://desk.example.com", `setting alerts.desk_url: "ftp://desk.example.com" is not the desk's address`},
		{"desk_url: desk.example.com", `setting alerts.desk_url: "desk.example.com" is not the desk's address`},
		{"rules: {stuck_queue: {aftr: 5m}}", ".aftr: there is no such setting"},
	} {
		_, err := Load(writeFile(t, svc("")+"alerts:\n  "+tc.yaml+"\n"), Overrides{})
		require.Error(t, err, tc.yaml)
		require.Contains(t, err.Error(), tc.want, tc.yaml)
	}
}

func TestAlertDefaultsFillWhatIsUnsaid(t *testing.T) {
	cfg, err := Load(writeFile(t, svc("")+`alerts:
  every: 1m
  desk_url: https://desk.example.com
  rules:
    failed_links: {over: 500}
    stuck_queue: {off: true}
`), Overrides{})
	require.NoError(t, err)
	a := cfg.Alerts.WithDefaults()
	require.Equal(t, time.Minute, a.Every)
	require.Equal(t, time.Hour, a.Repeat, "repeat left unsaid")
	require.Equal(t, "https://desk.example.com", a.DeskURL)
	require.Equal(t, FailedLinksRule{Over: 500, Rise: 20, Within: 15 * time.Minute}, a.Rules.FailedLinks)
	require.Equal(t, AfterRule{After: 15 * time.Minute, Off: true}, a.Rules.StuckQueue)
	require.Equal(t, AfterRule{After: 10 * time.Minute}, a.Rules.ServicePaused)
	require.Equal(t, CountRule{Over: 10, Within: 5 * time.Minute}, a.Rules.RefusedWebhooks)
	require.Equal(t, TimesRule{Times: 3}, a.Rules.TaskFailing)

	empty := Alerts{}.WithDefaults()
	require.Equal(t, DefaultAlertRules, empty.Rules)
	require.Equal(t, 30*time.Second, empty.Every)
}

// README's alerts block shows the defaults, desk_url aside (an example).
func TestREADMEShowsTheAlertDefaults(t *testing.T) {
	body, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(body), "```yaml\nalerts:")
	require.True(t, ok, "README has the alerts block")
	block, _, ok = strings.Cut("alerts:"+block, "```")
	require.True(t, ok)
	var cfg Config
	require.NoError(t, decode(strings.NewReader(block), &cfg), "README shows only keys syncdesk knows")
	require.Equal(t, DefaultAlertRules, cfg.Alerts.Rules)
	require.Equal(t, DefaultAlertEvery, cfg.Alerts.Every)
	require.Equal(t, DefaultAlertRepeat, cfg.Alerts.Repeat)
	require.Equal(t, Alerts{}.WithDefaults().Rules, cfg.Alerts.WithDefaults().Rules)
}
