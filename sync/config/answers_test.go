package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A service's answers that cannot be read stop the start, naming the
// setting: a hold of a year would stop a service for a year, a body that is
// no regular expression would match nothing, and a spent allowance with no
// hold would be asked again at once, forever.
func TestBadAnswersNameTheSetting(t *testing.T) {
	const svc = "services:\n  s:\n    preset: hubspot\n    headers: {Authorization: x}\n    objects: {contact: {}}\n    answers:\n"
	for answers, want := range map[string]string{
		"      - {status: 200}\n":                                     "setting services.s.answers[0].status: an answer to read otherwise is a refusal, 400 to 599",
		"      - {status: 403, body: '(unclosed'}\n":                  "setting services.s.answers[0].body: must be a regular expression",
		"      - {status: 423, hold: 8760h}\n":                        "setting services.s.answers[0].hold: must be between 0 and 24h0m0s, got 8760h0m0s",
		"      - {status: 423}\n      - {status: 429, quota: true}\n": "setting services.s.answers[1].hold: a spent allowance (quota: true) needs a hold",
	} {
		_, err := loadPresets(t, svc+answers)
		require.Error(t, err, answers)
		require.Contains(t, err.Error(), want, answers)
	}
}
