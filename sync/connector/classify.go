// Package connector talks to external services: the HTTP connector that any
// provider is configured onto in YAML, and the one classification of every
// outcome that the engine retries or gives up on.
package connector

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/syncdesk/syncdesk/sync/config"
)

// Class is what an outcome means for the next step.
type Class string

// Outcome classes.
const (
	OK        Class = "ok"
	Temporary Class = "temporary" // retry later: timeouts, resets, 408, 425, 429, 5xx, 409 to a keyed request, the service's answers
	Permanent Class = "permanent" // do not retry: validation, auth, not found, …
)

// Classify sorts an HTTP status (0 when no response came) and a transport
// error into a class, and says whether the request may have reached the
// provider although no success came back (ambiguous): then the next attempt
// must look the object up before creating it again.
//
// wrote tells whether the whole request was written to the connection;
// keyed whether it carried an Idempotency-Key. A provider's own refusals
// that mean "later" (config.Service.Answers) are read on top of this by the
// HTTP connector, which has their bodies.
func Classify(status int, err error, wrote, keyed bool) (class Class, ambiguous bool) {
	if err != nil {
		switch {
		case isRefused(err):
			return Temporary, false // nothing reached the provider
		case wrote:
			return Temporary, true // timeout or drop after sending: outcome unknown
		default:
			return Temporary, false
		}
	}
	switch {
	case status >= 200 && status < 300:
		return OK, false
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests:
		return Temporary, false
	case status == http.StatusConflict && keyed:
		// Stripe-like providers (and our sandbox) answer 409 to a request
		// whose Idempotency-Key an earlier one still holds. Re-sent with the
		// key later, it gets that request's answer; meanwhile the earlier
		// one may have taken effect.
		return Temporary, true
	case status >= 500:
		// A 5xx can come from a gateway whose upstream did the work, or from
		// a provider that failed after committing: treat it as unknown.
		return Temporary, true
	default:
		return Permanent, false
	}
}

// answerRule is one of the service's answers (config.Answer), its body
// pattern compiled: what a provider means by a refusal its status alone
// would have classified otherwise.
type answerRule struct {
	config.Answer
	body *regexp.Regexp
}

// answerRules compiles a service's answers. An answer whose body is not a
// regular expression stopped syncdesk at start (config validation); one
// that slipped past is left out rather than matching every body.
func answerRules(answers []config.Answer) []answerRule {
	var out []answerRule
	for _, a := range answers {
		re, err := regexp.Compile(a.Body)
		if err != nil {
			continue
		}
		out = append(out, answerRule{Answer: a, body: re})
	}
	return out
}

// readAnswer finds the first rule an answer of status with body matches.
// Such an answer is Temporary and not ambiguous, whatever its status: the
// provider refused to do anything (a spent allowance, a locked object, a
// migration under way) and says so in its body or status, so the request
// is retried as it is, with no lookup first.
func readAnswer(rules []answerRule, status int, body []byte) (answerRule, bool) {
	for _, r := range rules {
		if r.Status == status && r.body.Match(body) {
			return r, true
		}
	}
	return answerRule{}, false
}

func isRefused(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Describe puts a transport error in words a support person can act on.
func Describe(err error, wrote bool, timeout time.Duration) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		if wrote {
			return "no answer within " + timeout.String() + " (the request was sent; whether it took effect is unknown)"
		}
		return "no answer within " + timeout.String()
	case isRefused(err):
		return "connection refused: the service is down or the address is wrong"
	case errors.Is(err, context.Canceled):
		return "cancelled while sending (syncdesk was stopping)"
	case wrote:
		return "the connection dropped after the request was sent; whether it took effect is unknown"
	}
	return "could not reach the service: " + err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// RetryAfter reads a Retry-After header given in seconds or as an HTTP date,
// clamped to [0, max]. It returns 0 when the header is absent or unreadable.
func RetryAfter(v string, now time.Time, limit time.Duration) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0
		}
		if secs > int64(limit/time.Second) {
			return limit
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return 0
	}
	return min(max(d, 0), limit)
}
