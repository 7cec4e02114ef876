package seed

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/syncdesk/syncdesk/models"
)

// DefaultServices are the services Fill spreads links over when none are given.
var DefaultServices = []string{"crm", "payments", "erp"}

// profile is how one provider names its objects and where it takes them.
type profile struct {
	remote string   // the provider's object, e.g. deal
	prefix string   // of the provider's ids, e.g. deal_
	path   string   // of its collection, e.g. /deals
	types  []string // local types routed to the service
}

// profiles of the services Fill knows by name; any other name gets a
// generic profile that takes every type.
var profiles = map[string]profile{
	"crm":      {remote: "deal", prefix: "deal_", path: "/deals", types: []string{"order", "customer", "lead"}},
	"payments": {remote: "payment", prefix: "pay_", path: "/v1/payments", types: []string{"order"}},
	"erp":      {remote: "sales_order", prefix: "so_", path: "/api/sales-orders", types: []string{"order", "customer"}},
	"helpdesk": {remote: "organization", prefix: "org_", path: "/api/v2/organizations", types: []string{"customer"}},
}

// Types are the local types Fill creates records of.
var Types = []string{"order", "customer", "lead"}

func profileOf(service string) profile {
	if p, ok := profiles[service]; ok {
		return p
	}
	return profile{remote: service + "_object", prefix: service + "_", path: "/" + service, types: Types}
}

// TypesOf returns the local types Fill routes to a service.
func TypesOf(service string) []string { return profileOf(service).types }

// typeOf gives record n its type: 60% orders, 25% customers, 15% leads.
func typeOf(n int64) string {
	switch r := n % 20; {
	case r < 12:
		return "order"
	case r < 17:
		return "customer"
	}
	return "lead"
}

// servicesFor lists the services, among those asked for, that take a type;
// a type none of them takes goes to all of them.
func servicesFor(typ string, services []string) []string {
	var out []string
	for _, s := range services {
		if slices.Contains(profileOf(s).types, typ) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return services
	}
	return out
}

// pickStatus draws a link's status: 85% success, 5% retry, 7% failed, 2%
// new, 1% processing.
func pickStatus(rng *rand.Rand) models.Status {
	switch u := rng.IntN(1000); {
	case u < 850:
		return models.StatusSuccess
	case u < 900:
		return models.StatusRetry
	case u < 970:
		return models.StatusFailed
	case u < 990:
		return models.StatusNew
	}
	return models.StatusProcessing
}

// failure is one way a call goes wrong, as the connector words it.
type failure struct {
	code    int
	outcome models.Outcome
	weight  int
	// message is the attempt's error; the link's last error is the same
	// except when the outbox gave up after temporary failures.
	message func(f facts) string
	body    string // the provider's answer, "" when there was none
}

// facts are what a failure message may name.
type facts struct {
	remote, externalID, externalKey, localID string
}

// permanent failures end a link as failed. Their weights make a few large
// groups and a tail of small ones, as real failures do.
var permanent = []failure{
	{code: 422, outcome: models.OutcomePermanent, weight: 30, body: `{"error":{"code":"validation_failed","field":"amount"}}`,
		message: func(facts) string { return "HTTP 422: amount must be greater than 0" }},
	{code: 422, outcome: models.OutcomePermanent, weight: 8, body: `{"error":{"code":"validation_failed","field":"title"}}`,
		message: func(f facts) string {
			return fmt.Sprintf("HTTP 422: title is too long (%d characters, the limit is 80)", 81+len(f.localID)*7)
		}},
	{code: 404, outcome: models.OutcomePermanent, weight: 20, body: `{"error":{"code":"not_found"}}`,
		message: func(f facts) string { return fmt.Sprintf("HTTP 404: no %s %s", f.remote, f.externalID) }},
	{code: 409, outcome: models.OutcomePermanent, weight: 10, body: `{"error":{"code":"conflict"}}`,
		message: func(f facts) string {
			return fmt.Sprintf("HTTP 409: external_key %s is already used by %s", f.externalKey, f.externalID)
		}},
	{code: 400, outcome: models.OutcomePermanent, weight: 5, body: `{"error":{"code":"invalid_email"}}`,
		message: func(f facts) string {
			return fmt.Sprintf(`HTTP 400: email "buyer%s@example" is not a valid address`, f.localID)
		}},
	{code: 403, outcome: models.OutcomePermanent, weight: 2, body: `{"error":{"code":"forbidden"}}`,
		message: func(f facts) string { return "HTTP 403: the API key lacks the scope write:" + f.remote + "s" }},
}

// exhausted failures are temporary ones repeated until the outbox gave up.
var exhausted = []failure{
	{code: 503, outcome: models.OutcomeTemporary, weight: 15, body: `{"error":"service unavailable"}`,
		message: func(facts) string { return "HTTP 503: service unavailable" }},
	{code: 0, outcome: models.OutcomeTemporary, weight: 10,
		message: func(facts) string { return "no answer within 10s" }},
}

// temporary failures leave a link to retry.
var temporary = []failure{
	{code: 503, outcome: models.OutcomeTemporary, weight: 40, body: `{"error":"service unavailable"}`,
		message: func(facts) string { return "HTTP 503: service unavailable" }},
	{code: 429, outcome: models.OutcomeTemporary, weight: 30, body: `{"error":"rate_limited","retry_after":30}`,
		message: func(facts) string { return "HTTP 429: rate limit exceeded, retry in 30 seconds" }},
	{code: 502, outcome: models.OutcomeTemporary, weight: 15, body: `<html><body>502 Bad Gateway</body></html>`,
		message: func(facts) string { return "HTTP 502: bad gateway" }},
	{code: 0, outcome: models.OutcomeTemporary, weight: 15,
		message: func(facts) string { return "connection refused: the service is down or the address is wrong" }},
}

// ambiguous is the failure after which nobody knows whether the call took
// effect: the next attempt looks up first.
var ambiguous = failure{code: 0, outcome: models.OutcomeAmbiguous, weight: 1,
	message: func(facts) string {
		return "no answer within 10s (the request was sent; whether it took effect is unknown)"
	}}

func pick(rng *rand.Rand, fs []failure) failure {
	total := 0
	for _, f := range fs {
		total += f.weight
	}
	u := rng.IntN(total)
	for _, f := range fs {
		if u < f.weight {
			return f
		}
		u -= f.weight
	}
	return fs[len(fs)-1]
}

// payload is a record's JSON, shaped by its type: a few hundred bytes.
func payload(typ string, n int64, rng *rand.Rand) string {
	switch typ {
	case "order":
		qty, price := 1+rng.IntN(4), 499+rng.IntN(200)*100
		return fmt.Sprintf(`{"currency":"EUR","customer":{"email":"buyer%d@example.com","name":"Buyer %d"},`+
			`"lines":[{"qty":%d,"sku":"SKU-%04d","title":"Linen shirt, size M","unit_price":%d}],`+
			`"shipping":{"city":"Lyon","country":"FR","method":"standard"},"status":"paid","total":%d}`,
			n%50000, n%50000, qty, rng.IntN(10000), price, qty*price)
	case "customer":
		return fmt.Sprintf(`{"address":{"city":"Nantes","country":"FR","line1":"%d rue des Olivettes"},`+
			`"email":"customer%d@example.com","marketing_opt_in":%t,"name":"Customer %d","phone":"+33 6 12 %02d %02d %02d","tier":"%s"}`,
			1+rng.IntN(120), n, rng.IntN(2) == 0, n, rng.IntN(100), rng.IntN(100), rng.IntN(100), []string{"standard", "silver", "gold"}[rng.IntN(3)])
	}
	return fmt.Sprintf(`{"company":"Company %d","contact":{"email":"lead%d@example.com","name":"Lead %d"},`+
		`"estimated_value":%d,"notes":"Asked for a quote on the spring collection.","source":"%s","stage":"%s"}`,
		n, n, n, 1000+rng.IntN(50000), []string{"website", "trade show", "referral"}[rng.IntN(3)],
		[]string{"new", "qualified", "proposal"}[rng.IntN(3)])
}

// statusText is the reason phrase of the codes the shape uses.
var statusText = map[int]string{200: "OK", 201: "Created", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
	409: "Conflict", 422: "Unprocessable Entity", 429: "Too Many Requests", 502: "Bad Gateway", 503: "Service Unavailable"}

// response is an attempt's answer excerpt, as the connector logs it.
func response(code int, requestID, body string) string {
	if code == 0 {
		return ""
	}
	ct := "application/json"
	if len(body) > 0 && body[0] == '<' {
		ct = "text/html"
	}
	return "HTTP/1.1 " + strconv.Itoa(code) + " " + statusText[code] + "\nContent-Type: " + ct + "\nX-Request-Id: " + requestID + "\n\n" + body
}
