package config

import (
	"fmt"
	"regexp"
	"time"
)

// Answer says what one of a provider's refusals means where the HTTP status
// alone says otherwise: a 403 whose body says the org's API allowance is
// spent (Salesforce), a 423 or 477 that asks to come back later (HubSpot),
// a 429 for a daily limit that a window's wait will not lift. Such an answer
// did nothing at the provider: it is retried, never taken for a request
// that may have taken effect. The presets ship their providers' answers
// (README, "Sign-in and pace").
type Answer struct {
	// Status is the answer's HTTP status (4xx or 5xx).
	Status int `yaml:"status"`
	// Body is a regular expression the answer's body must match; "" matches
	// any body.
	Body string `yaml:"body"`
	// Hold is how long every call to the service waits after this answer,
	// all instances together; the answer's Retry-After wins when longer.
	Hold time.Duration `yaml:"hold"`
	// Quota says the provider's allowance for a period is spent: not the
	// link's fault, so its attempt is not counted, and it is sent again
	// when the hold is over (needs a hold).
	Quota bool `yaml:"quota"`
	// Means puts the answer in words for the attempt log and the Services
	// page ("the org's API requests for the last 24 hours are spent").
	Means string `yaml:"means"`
}

// maxAnswerHold bounds an answer's hold: a provider's allowance that is
// spent for more than a day is a matter for a person, not a wait.
const maxAnswerHold = 24 * time.Hour

// validateAnswers checks a service's answers and names each bad setting.
func validateAnswers(answers []Answer, bad func(setting, format string, a ...any)) {
	for i, a := range answers {
		at := fmt.Sprintf("answers[%d]", i)
		if a.Status < 400 || a.Status > 599 {
			bad(at+".status", "an answer to read otherwise is a refusal, 400 to 599 (Salesforce: 403), got %d", a.Status)
		}
		if _, err := regexp.Compile(a.Body); err != nil {
			bad(at+".body", "must be a regular expression over the answer's body (e.g. 'REQUEST_LIMIT_EXCEEDED'): %v", err)
		}
		if a.Hold < 0 || a.Hold > maxAnswerHold {
			bad(at+".hold", "must be between 0 and %v, got %v", maxAnswerHold, a.Hold)
		}
		if a.Quota && a.Hold <= 0 {
			bad(at+".hold", "a spent allowance (quota: true) needs a hold, how long to wait before asking again (e.g. 1h)")
		}
	}
}
