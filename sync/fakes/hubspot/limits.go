package hubspot

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// HubSpot's limits, from its usage guidelines
// (https://developers.hubspot.com/docs/developer-tooling/platform/usage-guidelines.md):
// a private app on Free/Starter may make 100 requests per 10 seconds and
// 250,000 a day; each answer carries X-HubSpot-RateLimit-Max, -Remaining
// and -Interval-Milliseconds (the window the other two apply to) and, for
// private apps, -Daily and -Daily-Remaining
// (https://developers.hubspot.com/changelog/2018-11-06-rate-limit-information-headers-will-be-included-in-http-responses;
// OAuth calls carry no daily headers:
// https://developers.hubspot.com/changelog/rate-limit-headers-will-now-appear-for-oauth-authenticated-calls).
// Beyond a limit HubSpot answers 429 with errorType RATE_LIMIT and a
// policyName saying which limit (DAILY, TEN_SECONDLY_ROLLING, SECONDLY).
// The daily count resets at midnight in the account's time zone; the fake
// takes UTC.
// Search has its own limit, four requests per second per token
// (https://developers.hubspot.com/changelog/crm-search-api-rate-limit-increase),
// and its answers carry none of the rate-limit headers.
var (
	defaultLimit       = Limit{Max: 100, Window: 10 * time.Second}
	defaultSearchLimit = Limit{Max: 4, Window: time.Second}
)

const defaultDaily = 250_000

// The policies named in a 429.
const (
	policyTenSecondly = "TEN_SECONDLY_ROLLING"
	policySecondly    = "SECONDLY"
	policyDaily       = "DAILY"
)

// Header names HubSpot uses.
const (
	HeaderInterval       = "X-HubSpot-RateLimit-Interval-Milliseconds"
	HeaderMax            = "X-HubSpot-RateLimit-Max"
	HeaderRemaining      = "X-HubSpot-RateLimit-Remaining"
	HeaderDaily          = "X-HubSpot-RateLimit-Daily"
	HeaderDailyRemaining = "X-HubSpot-RateLimit-Daily-Remaining"
)

type limitKind int

const (
	general limitKind = iota
	search
)

// window holds the admission times of the requests still counting.
type window struct{ hits []time.Time }

// admit counts a request at now unless Max requests already count: a
// request counts while now is before its admission plus Window, so the
// limit holds in every window of that length, not only in aligned ones.
// Refused requests do not count.
func (w *window) admit(now time.Time, l Limit) (ok bool, remaining int) {
	expired := 0
	for expired < len(w.hits) && !now.Before(w.hits[expired].Add(l.Window)) {
		expired++
	}
	w.hits = append(w.hits[:0], w.hits[expired:]...)
	if len(w.hits) >= l.Max {
		return false, 0
	}
	w.hits = append(w.hits, now)
	return true, l.Max - len(w.hits)
}

type tokenState struct {
	general, search window
	day             string // the UTC day used counts
	used            int
}

// limiter keeps every token's windows and daily count. One lock makes the
// count exact however many requests arrive at once.
type limiter struct {
	general, search Limit
	daily           int

	mu     sync.Mutex
	tokens map[string]*tokenState
}

func newLimiter(opts Options) *limiter {
	l := &limiter{general: opts.Limit, search: opts.SearchLimit, daily: opts.Daily, tokens: map[string]*tokenState{}}
	if l.general.Max <= 0 || l.general.Window <= 0 {
		l.general = defaultLimit
	}
	if l.search.Max <= 0 || l.search.Window <= 0 {
		l.search = defaultSearchLimit
	}
	if l.daily <= 0 {
		l.daily = defaultDaily
	}
	return l
}

// admit decides one request at now, sets the rate-limit headers and, when
// refusing, answers the 429 itself.
func (l *limiter) admit(w http.ResponseWriter, token string, kind limitKind, now time.Time) bool {
	policy, h := l.decide(token, kind, now)
	for k, v := range h {
		w.Header().Set(k, v)
	}
	if policy == "" {
		return true
	}
	fail(w, http.StatusTooManyRequests, rateLimited(policy))
	return false
}

// decide returns the policy a request breaks ("" when admitted) and the
// headers to send.
func (l *limiter) decide(token string, kind limitKind, now time.Time) (policy string, h map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.tokens[token]
	if s == nil {
		s = &tokenState{}
		l.tokens[token] = s
	}
	if kind == search {
		if ok, _ := s.search.admit(now, l.search); !ok {
			return policySecondly, nil
		}
		return "", nil
	}
	if day := now.UTC().Format(time.DateOnly); day != s.day {
		s.day, s.used = day, 0
	}
	remaining := 0
	if s.used >= l.daily {
		policy = policyDaily
	} else if ok, left := s.general.admit(now, l.general); ok {
		s.used++
		remaining = left
	} else {
		policy = policyTenSecondly
	}
	return policy, map[string]string{
		HeaderInterval:       strconv.FormatInt(l.general.Window.Milliseconds(), 10),
		HeaderMax:            strconv.Itoa(l.general.Max),
		HeaderRemaining:      strconv.Itoa(remaining),
		HeaderDaily:          strconv.Itoa(l.daily),
		HeaderDailyRemaining: strconv.Itoa(l.daily - s.used),
	}
}

// rateLimited is the 429 body, as in HubSpot's usage guidelines: "You have
// reached your daily limit." with policyName DAILY, and in the same words
// for the other policies. category RATE_LIMITS is the error-responses
// changelog's.
func rateLimited(policy string) apiError {
	msg := map[string]string{
		policyDaily:       "You have reached your daily limit.",
		policyTenSecondly: "You have reached your ten_secondly_rolling limit.",
		policySecondly:    "You have reached your secondly limit.",
	}[policy]
	return apiError{Message: msg, ErrorType: "RATE_LIMIT", PolicyName: policy, Category: "RATE_LIMITS"}
}
