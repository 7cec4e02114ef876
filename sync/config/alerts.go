package config

import (
	"fmt"
	"net/url"
	"sort"
	"time"
)

// Alerts tell the desk's people what needs them, where they already are:
// rules open incidents, and each incident is sent to every channel
// (sync/alerts, sync/notify).
type Alerts struct {
	// Channels are where notifications go, by name.
	Channels map[string]AlertChannel `yaml:"channels"`
	// Rules say when an incident opens; each has a sensible default.
	Rules AlertRules `yaml:"rules"`
	// Every is how often the rules are checked, all instances together.
	Every time.Duration `yaml:"every"`
	// Repeat is how often an incident still open is sent again.
	Repeat time.Duration `yaml:"repeat"`
	// DeskURL is the desk's public address (https://desk.example.com), for
	// links in notifications; without it they carry a path only.
	DeskURL string `yaml:"desk_url"`
}

// Alerts' defaults for the values a file leaves unsaid.
const (
	DefaultAlertEvery  = 30 * time.Second
	DefaultAlertRepeat = time.Hour
)

// WithDefaults returns the alerts with every value left zero at its
// default. Zero means "unsaid", so Default() and README stay free of them.
func (a Alerts) WithDefaults() Alerts {
	orDuration(&a.Every, DefaultAlertEvery)
	orDuration(&a.Repeat, DefaultAlertRepeat)
	a.Rules = a.Rules.withDefaults()
	return a
}

// ChannelNames returns the channels' names in order.
func (a Alerts) ChannelNames() []string {
	names := make([]string, 0, len(a.Channels))
	for name := range a.Channels {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (a Alerts) validate() []error {
	errs := a.Rules.validate()
	d := a.WithDefaults()
	bad := func(setting, format string, v ...any) {
		errs = append(errs, fmt.Errorf("setting alerts.%s: %s", setting, fmt.Sprintf(format, v...)))
	}
	if d.Every < time.Second || d.Every > time.Hour {
		bad("every", "must be a duration between 1s and 1h such as 30s, got %v", d.Every)
	}
	if d.Repeat < time.Minute || d.Repeat > 7*24*time.Hour {
		bad("repeat", "must be a duration between 1m and 168h such as 1h, got %v", d.Repeat)
	}
	if a.DeskURL != "" {
		u, err := url.Parse(a.DeskURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			bad("desk_url", "%q is not the desk's address such as https://desk.example.com", a.DeskURL)
		}
	}
	for _, name := range a.ChannelNames() {
		errs = append(errs, a.Channels[name].validate(name)...)
	}
	return errs
}

// Secrets returns the channels' secret values, for a redactor of what is
// kept of a failed send.
func (a Alerts) Secrets() []string { return a.secrets() }

// secrets returns the channels' secret values, for the redactor.
func (a Alerts) secrets() []string {
	var out []string
	for _, name := range a.ChannelNames() {
		out = append(out, a.Channels[name].secrets()...)
	}
	return out
}
