package config

import "sort"

// Alerts tell the desk's people what needs them, where they already are:
// rules open incidents, and each incident is sent to every channel
// (sync/alerts, sync/notify).
type Alerts struct {
	// Channels are where notifications go, by name.
	Channels map[string]AlertChannel `yaml:"channels"`
	// Rules say when an incident opens; each has a sensible default.
	Rules AlertRules `yaml:"rules"`
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
	for _, name := range a.ChannelNames() {
		errs = append(errs, a.Channels[name].validate(name)...)
	}
	return errs
}

// secrets returns the channels' secret values, for the redactor.
func (a Alerts) secrets() []string {
	var out []string
	for _, name := range a.ChannelNames() {
		out = append(out, a.Channels[name].secrets()...)
	}
	return out
}
