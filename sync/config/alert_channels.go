package config

// AlertChannel is one place notifications go (sync/notify).
type AlertChannel struct{}

// validate checks channel name.
func (ch AlertChannel) validate(name string) []error { return nil }

// secrets returns the channel's secret values, expanded, with their pieces.
func (ch AlertChannel) secrets() []string { return nil }
