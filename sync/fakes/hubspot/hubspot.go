// Package hubspot is a fake of HubSpot's CRM v3 objects API (contacts,
// companies, deals) as an http.Handler, written from HubSpot's
// documentation. It models what decides whether a lost answer becomes a
// duplicate:
//   - unique-value properties (hasUniqueValue, and contacts' email): a create
//     or update with a value another object holds is refused with 409 naming
//     that object's id;
//   - reads and updates by a unique property (?idProperty=), strongly
//     consistent;
//   - search that sees a change only after SearchLag (eventually consistent);
//   - per-token rate limits over a rolling window with X-HubSpot-RateLimit-*
//     headers, and search's own lower limit.
//
// 5xx answers, hangs and lost answers are not modelled here: tests wrap the
// fake with sync/fakes/faults (see Answer for HubSpot-shaped fault bodies).
//
// Sources (cited again where each behaviour is modelled):
//   - objects: https://developers.hubspot.com/docs/api/crm/contacts
//   - idProperty: https://developers.hubspot.com/docs/api-reference/latest/crm/objects/custom-objects/get-custom-object.md
//     and https://developers.hubspot.com/changelog/updating-objects-by-custom-field-and-adding-owner-properties-via-the-api
//   - unique properties: https://developers.hubspot.com/docs/api/crm/properties
//     and https://developers.hubspot.com/changelog/unique-properties-for-contacts
//   - search: https://developers.hubspot.com/docs-beta/crm/search
//   - limits: https://developers.hubspot.com/docs/developer-tooling/platform/usage-guidelines.md
//   - errors: https://developers.hubspot.com/docs/faq/api-error-responses
package hubspot

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// Property declares one property of an object type.
type Property struct {
	Name string
	// Unique is HubSpot's hasUniqueValue: no two objects of the type may
	// hold the same value.
	Unique bool
}

// Limit allows Max requests per token in any Window (a rolling window:
// each request counts until Window after it was admitted).
type Limit struct {
	Max    int
	Window time.Duration
}

// Options configure a Fake; zero values take HubSpot's documented defaults.
type Options struct {
	// Properties declares, per object type, properties requests may set on
	// top of HubSpot's defaults (DefaultProperties); a type named here that
	// is not contacts, companies or deals is served too.
	Properties map[string][]Property
	// SearchLag is how long a create or update takes to reach search.
	SearchLag time.Duration
	// Now tells the time (default time.Now).
	Now func() time.Time
	// Tokens, when set, are the only private app tokens accepted; otherwise
	// any bearer token is, each with its own limits.
	Tokens []string
	// Limit is the general limit per token (default 100 per 10 s, a
	// Free/Starter private app).
	Limit Limit
	// SearchLimit is search's own limit per token (default 4 per second).
	SearchLimit Limit
	// Daily is the number of requests allowed per token per UTC day
	// (default 250,000).
	Daily int
}

// DefaultProperties are the properties each standard type declares before
// Options.Properties adds to them. Contacts' email is unique: HubSpot calls
// it "the primary unique identifier to avoid duplicate contacts"
// (https://developers.hubspot.com/docs/api/crm/contacts).
func DefaultProperties() map[string][]Property {
	return map[string][]Property{
		"contacts":  {{Name: "email", Unique: true}, {Name: "firstname"}, {Name: "lastname"}, {Name: "phone"}, {Name: "company"}},
		"companies": {{Name: "name"}, {Name: "domain"}, {Name: "phone"}, {Name: "city"}},
		"deals":     {{Name: "dealname"}, {Name: "amount"}, {Name: "dealstage"}, {Name: "pipeline"}, {Name: "closedate"}},
	}
}

// Fake is the fake HubSpot API. Safe for concurrent use.
type Fake struct {
	opts   Options
	mux    *http.ServeMux
	limits *limiter
	tables map[string]*table // fixed at New; their contents are guarded by mu

	mu     sync.Mutex
	nextID int64
	stats  Stats
}

// New returns a fake serving the object types of DefaultProperties and opts.
func New(opts Options) *Fake {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	f := &Fake{
		opts:   opts,
		mux:    http.NewServeMux(),
		limits: newLimiter(opts),
		tables: map[string]*table{},
		nextID: 1000,
		stats:  Stats{Requests: map[string]int{}},
	}
	for typ, props := range DefaultProperties() {
		f.tables[typ] = newTable(typ, props)
	}
	for typ, props := range opts.Properties {
		if t := f.tables[typ]; t != nil {
			t.declare(props)
		} else {
			f.tables[typ] = newTable(typ, props)
		}
	}
	f.routes()
	return f
}

// ServeHTTP answers one request as HubSpot would.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.mux.ServeHTTP(w, r) }

func (f *Fake) routes() {
	const base = "/crm/v3/objects/{type}"
	f.mux.Handle("POST "+base, f.guard("POST "+base, general, f.create))
	f.mux.Handle("GET "+base, f.guard("GET "+base, general, f.list))
	f.mux.Handle("GET "+base+"/{id}", f.guard("GET "+base+"/{id}", general, f.read))
	f.mux.Handle("PATCH "+base+"/{id}", f.guard("PATCH "+base+"/{id}", general, f.update))
	f.mux.Handle("POST "+base+"/search", f.guard("POST "+base+"/search", search, f.search))
}

// guard authenticates, counts and rate-limits a request before its handler
// runs, in HubSpot's order: a request without a token is refused before it
// counts against any limit.
func (f *Fake) guard(pattern string, kind limitKind, h func(http.ResponseWriter, *http.Request, *table)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := f.token(r)
		if !ok {
			unauthorized(w)
			return
		}
		typ := r.PathValue("type")
		f.countRequest(strings.Replace(pattern, "{type}", typ, 1))
		if !f.limits.admit(w, token, kind, f.opts.Now()) {
			f.mu.Lock()
			f.stats.TooMany++
			f.mu.Unlock()
			return
		}
		t := f.tables[typ]
		if t == nil {
			invalid(w, "Unable to infer object type from: "+typ)
			return
		}
		h(w, r, t)
	})
}

// token reads the private app token from "Authorization: Bearer ...".
func (f *Fake) token(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	if len(f.opts.Tokens) == 0 {
		return token, true
	}
	for _, t := range f.opts.Tokens {
		if t == token {
			return token, true
		}
	}
	return "", false
}

func (f *Fake) countRequest(endpoint string) {
	f.mu.Lock()
	f.stats.Requests[endpoint]++
	f.mu.Unlock()
}
