package config

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/models/discrepancy"
)

// Service is one external system syncdesk pushes records to, configured
// entirely in YAML: no Go code per provider.
type Service struct {
	// Preset names a provider shipped in the binary (stripe, hubspot,
	// salesforce) whose settings this service starts from; every key given
	// here overrides the preset's.
	Preset string `yaml:"preset"`
	// Provider is the provider's name in words ("Stripe"), for pages.
	Provider string `yaml:"provider"`
	// Kind is the connector: "http" is the only one so far.
	Kind    string `yaml:"kind"`
	BaseURL string `yaml:"base_url"`
	// Headers are sent on every call. ${VAR} is replaced from the
	// environment at start; the expanded values live only in memory.
	Headers map[string]string `yaml:"headers"`
	// IdempotencyHeader names the header that carries the Idempotency-Key
	// on creates; "" means the provider ignores such keys.
	IdempotencyHeader string `yaml:"idempotency_header"`
	// IdempotencyWindow is how long the provider replays a key's first
	// answer (Stripe: 24h); 0 means it does not say. Past it, a create
	// whose last attempt is older looks the key up before sending again.
	IdempotencyWindow time.Duration `yaml:"idempotency_window"`
	// Auth adds basic or OAuth 2.0 credentials to every call.
	Auth Auth `yaml:"auth"`
	// RateLimit bounds the calls to the service, all instances together.
	RateLimit RateLimit `yaml:"rate_limit"`
	// Breaker pauses the service on its own while its provider fails.
	Breaker Breaker `yaml:"breaker"`
	// Answers read the provider's refusals that are not what their status
	// says (a spent allowance, a lock, a migration), first match first.
	Answers []Answer      `yaml:"answers"`
	Timeout time.Duration `yaml:"timeout"`
	Retry   Retry         `yaml:"retry"`
	// LookupBeforeCreate makes every create look the key up first, not only
	// after an attempt whose outcome is unknown.
	LookupBeforeCreate bool `yaml:"lookup_before_create"`
	// Objects routes local types to this service.
	Objects map[string]Object `yaml:"objects"`
	// Webhook, when set, accepts the service's webhooks at POST /hooks/NAME.
	Webhook *Webhook `yaml:"webhook"`
	// Reconcile says how the service's objects are compared with our links.
	Reconcile Reconcile `yaml:"reconcile"`
}

// Reconcile shapes the reconciliation of one service.
type Reconcile struct {
	// Every is how often the scheduler reconciles the service (default 1h).
	Every time.Duration `yaml:"every"`
	// Manual turns the schedule off: runs start only on demand.
	Manual bool `yaml:"manual"`
	// MaxFixes is the safety valve: a run that would fix more stops after
	// this many and waits for an operator to confirm the rest (default 100).
	MaxFixes int `yaml:"max_fixes"`
	// AutoFix says, per discrepancy kind, whether a run fixes it (true) or
	// only reports it. A kind not named keeps its default: every kind is
	// fixed except duplicate_remote, which needs a person.
	AutoFix map[string]bool `yaml:"auto_fix"`
	// Compare names, per local type, the fields compared with the
	// provider's object; a type not named compares the record payload's
	// top-level fields.
	Compare map[string][]string `yaml:"compare"`
}

// Fixes reports whether a run fixes discrepancies of kind on its own.
func (r Reconcile) Fixes(kind string) bool {
	if v, ok := r.AutoFix[kind]; ok {
		return v
	}
	return kind != discrepancy.DuplicateRemote
}

// Retry bounds the retries of temporary failures.
type Retry struct {
	MaxAttempts int           `yaml:"max_attempts"`
	Base        time.Duration `yaml:"base"`
	Max         time.Duration `yaml:"max"`
}

// Object says how one local type maps onto the provider's API.
type Object struct {
	// Remote names the provider's object in operation names ("deal" → deal.create).
	Remote string `yaml:"remote"`
	// ExternalKey is our stable key template; {local_id} and {local_type} are filled in.
	ExternalKey string `yaml:"external_key"`
	// KeyField is where the key goes in the body, and where lookups and lists carry it.
	KeyField string `yaml:"key_field"`
	// IDField is where the provider's id sits in its responses.
	IDField string `yaml:"id_field"`
	Create  string `yaml:"create"` // "POST /deals"
	Update  string `yaml:"update"` // "PUT /deals/{external_id}"
	Lookup  string `yaml:"lookup"` // "GET /deals?external_key={external_key}"; "" = cannot look up
	List    string `yaml:"list"`   // "GET /deals?cursor={cursor}"; "" = cannot list
	// Upsert creates or updates the object by our key in one idempotent
	// call ("PATCH /sobjects/Account/Key__c/{external_key}"); when set,
	// every send is an upsert and needs no lookup.
	Upsert string `yaml:"upsert"`
	// Delete removes the object of a deleted record ("DELETE
	// /deals/{external_id}"); "" with no archive either = the service has
	// no delete, and the objects of deleted records stay.
	Delete string `yaml:"delete"`
	// Archive, instead of delete, marks the object of a deleted record
	// with an update ("PATCH /deals/{external_id}") whose body is
	// ArchiveBody ({"archived": true}).
	Archive     string `yaml:"archive"`
	ArchiveBody Body   `yaml:"archive_body"`
	// Body maps the record's payload onto the request body; empty sends
	// the payload as it is, with our key at key_field.
	Body Body `yaml:"body"`
	// Encoding of request bodies: json (default) or form (Stripe's
	// application/x-www-form-urlencoded, nested keys in brackets).
	Encoding string `yaml:"encoding"`
	// Fields are the payload fields a record of this type carries; when
	// given, a body mapping that reads any other stops syncdesk at start.
	Fields []string `yaml:"fields"`
	// Items is the path of the list in list and search answers (data,
	// results, records); default: a bare list, items or data.
	Items string `yaml:"items"`
	// Paging says how a list answer leads to the next page.
	Paging Paging `yaml:"paging"`
	// LookupBody, for a lookup by POST search, is a gojq expression that
	// yields the search's JSON body; $key is our key.
	LookupBody string `yaml:"lookup_body"`
	// LookupConsistency is strong (default: a lookup sees an object as
	// soon as it is created) or eventual (a search that can lag: never the
	// only guard right after an unknown outcome).
	LookupConsistency string `yaml:"lookup_consistency"`
	// Conflict, when set, adopts the object a refused create names.
	Conflict *Conflict `yaml:"conflict"`
}

// defaultReconcileEvery is how often a service is reconciled when its
// configuration does not say (README, reconcile.every).
const defaultReconcileEvery = time.Hour

// Period is how often the scheduler reconciles the service: Every, or the
// default for a service that did not go through Complete.
func (c Reconcile) Period() time.Duration {
	return cmp.Or(max(c.Every, 0), defaultReconcileEvery)
}

// ComparedFields names the fields of a record's payload that are compared
// with the provider's copy of its object, by reconciliation and by a CRM's
// deal.updated: compare when the configuration lists them
// (reconcile.compare for the type), else the payload's top-level fields but
// the key and id fields, which the outbox and the provider set themselves.
// Sorted.
func (o Object) ComparedFields(compare []string, payload map[string]any) []string {
	if compare != nil {
		return slices.Sorted(slices.Values(compare))
	}
	key, id := cmp.Or(o.KeyField, "external_key"), cmp.Or(o.IDField, "id")
	var fields []string
	for f := range payload {
		if f != key && f != id {
			fields = append(fields, f)
		}
	}
	slices.Sort(fields)
	return fields
}

// Endpoint is a parsed "METHOD /path?query" template.
type Endpoint struct{ Method, Path string }

// ParseEndpoint reads "METHOD /path" into an Endpoint.
func ParseEndpoint(s string) (Endpoint, error) {
	method, path, ok := strings.Cut(strings.TrimSpace(s), " ")
	method = strings.ToUpper(method)
	path = strings.TrimSpace(path)
	switch {
	case !ok || !strings.HasPrefix(path, "/"):
		return Endpoint{}, fmt.Errorf("%q is not METHOD /path", s)
	case method != http.MethodGet && method != http.MethodPost && method != http.MethodPut && method != http.MethodPatch &&
		method != http.MethodDelete:
		return Endpoint{}, fmt.Errorf("%q: method must be GET, POST, PUT, PATCH or DELETE", s)
	}
	return Endpoint{Method: method, Path: path}, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ExpandEnv replaces ${VAR} with the environment's value and reports the
// variables that are not set.
func ExpandEnv(s string) (string, []string) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := envRef.FindStringSubmatch(m)[1]
		v, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	return out, missing
}

// applyDefaults fills what a service left unsaid.
func (s *Service) applyDefaults() {
	if s.Kind == "" {
		s.Kind = "http"
	}
	// Every endpoint's path starts with "/": a base_url written with a
	// trailing one would send //crm/v3/…, which many providers answer 404.
	s.BaseURL = strings.TrimRight(s.BaseURL, "/")
	if s.Timeout == 0 {
		s.Timeout = 10 * time.Second
	}
	if s.Retry.MaxAttempts == 0 {
		s.Retry.MaxAttempts = 6
	}
	if s.Retry.Base == 0 {
		s.Retry.Base = 2 * time.Second
	}
	if s.Retry.Max == 0 {
		s.Retry.Max = 15 * time.Minute
	}
	s.Breaker.applyDefaults()
	if s.Reconcile.Every == 0 {
		s.Reconcile.Every = defaultReconcileEvery
	}
	if s.Reconcile.MaxFixes == 0 {
		s.Reconcile.MaxFixes = 100
	}
	for name, o := range s.Objects {
		if o.KeyField == "" {
			o.KeyField = "external_key"
		}
		if o.IDField == "" {
			o.IDField = "id"
		}
		if o.Remote == "" {
			o.Remote = name
		}
		if o.ExternalKey == "" {
			o.ExternalKey = "{local_type}_{local_id}"
		}
		s.Objects[name] = o
	}
}

var serviceName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)

// validate checks one service and names each bad setting.
func (s Service) validate(name string) []error {
	var errs []error
	bad := func(setting, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting services.%s.%s: %s", name, setting, fmt.Sprintf(format, a...)))
	}
	if !serviceName.MatchString(name) {
		bad("", "a service name is lower-case letters, digits, - and _ (got %q)", name)
	}
	if s.Kind != "http" {
		bad("kind", "%q is not a known connector (http)", s.Kind)
	}
	if u, err := url.Parse(s.BaseURL); len(s.Objects) > 0 && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		bad("base_url", "%q is not an http(s) URL", s.BaseURL)
	}
	checkHeaders(bad, s.Headers)
	if s.Timeout < 0 {
		bad("timeout", "must be positive")
	}
	if s.Retry.MaxAttempts < 1 || s.Retry.MaxAttempts > 100 {
		bad("retry.max_attempts", "must be between 1 and 100, got %d", s.Retry.MaxAttempts)
	}
	if s.Retry.Base <= 0 || s.Retry.Max < s.Retry.Base {
		bad("retry", "base must be positive and max at least base")
	}
	if len(s.Objects) == 0 && s.Webhook == nil {
		bad("objects", "route at least one local type to the service, or configure its webhook")
	}
	if s.Webhook != nil {
		errs = append(errs, s.Webhook.validate(name, s.Objects)...)
	}
	errs = append(errs, s.Reconcile.validate(name, s.Objects)...)
	errs = append(errs, s.Auth.validate(name)...)
	errs = append(errs, s.RateLimit.validate(name)...)
	errs = append(errs, s.Breaker.validate(name)...)
	validateAnswers(s.Answers, bad)
	for _, typ := range slices.Sorted(maps.Keys(s.Objects)) {
		s.Objects[typ].validate(func(setting, format string, a ...any) {
			bad(strings.TrimSuffix("objects."+typ+"."+setting, "."), format, a...)
		})
	}
	if s.IdempotencyWindow < 0 {
		bad("idempotency_window", "must be a positive duration such as 24h")
	}
	return errs
}

// Routes returns the services a local type is routed to, sorted.
func (c Config) Routes(localType string) []string {
	var out []string
	for name, s := range c.Services {
		if _, ok := s.Objects[localType]; ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// ServiceNames returns the configured services, sorted.
func (c Config) ServiceNames() []string { return slices.Sorted(maps.Keys(c.Services)) }

func (r Reconcile) validate(name string, objects map[string]Object) []error {
	var errs []error
	bad := func(setting, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting services.%s.reconcile.%s: %s", name, setting, fmt.Sprintf(format, a...)))
	}
	if r.Every < 0 {
		bad("every", "must be a positive duration such as 1h (use manual: true for no schedule)")
	}
	if r.MaxFixes < 0 {
		bad("max_fixes", "must be at least 1, got %d", r.MaxFixes)
	}
	for _, kind := range slices.Sorted(maps.Keys(r.AutoFix)) {
		if !slices.Contains(discrepancy.Kinds, kind) {
			bad("auto_fix."+kind, "not a discrepancy kind (%s)", strings.Join(discrepancy.Kinds, ", "))
		}
		if kind == discrepancy.DuplicateRemote && r.AutoFix[kind] {
			bad("auto_fix."+kind, "a duplicate needs a person to choose which object to keep; it can only be reported")
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(r.Compare)) {
		if _, ok := objects[typ]; !ok {
			bad("compare."+typ, "%s is not routed to this service", typ)
		}
		if len(r.Compare[typ]) == 0 || slices.Contains(r.Compare[typ], "") {
			bad("compare."+typ, "list the fields to compare, or leave the type out to compare the whole payload")
		}
	}
	return errs
}
