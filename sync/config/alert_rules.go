package config

// AlertRules say when an incident opens (sync/alerts).
type AlertRules struct{}

func (r AlertRules) validate() []error { return nil }
