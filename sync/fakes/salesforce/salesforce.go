// Package salesforce is a fake of Salesforce's REST API, written from
// Salesforce's documentation, as an http.Handler for httptest servers: the
// OAuth 2.0 client-credentials (and refresh-token) flow with tokens that
// expire, upsert by external ID (201 created, 200 or 204 updated, 300 when
// several records carry the value), records read and written by id, and a
// small SOQL query with nextRecordsUrl paging. Faults (5xx, 429, hangs,
// answers lost after commit) come from sync/fakes/faults wrapped around it.
//
// The pages each part follows are cited next to it. Everything lives in
// memory and is safe for concurrent use.
package salesforce

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/syncdesk/syncdesk/sync/clock"
)

// Object describes one sObject the fake serves.
type Object struct {
	// Name is the object's API name: Account, Contact, Invoice__c.
	Name string
	// KeyPrefix is the first three characters of its record ids; default
	// 001 Account, 003 Contact, 006 Opportunity, 00Q Lead, 500 Case, and
	// a00, a01, … for custom objects in the order given.
	KeyPrefix string
	// Fields are the fields a request may set or select, besides Id and the
	// system fields (CreatedDate, LastModifiedDate, SystemModstamp).
	Fields []string
	// ExternalIDs are the fields marked External ID: upserts and reads by
	// external ID go through them. Each must be in Fields.
	ExternalIDs []string
	// Unique are the external ID fields also marked Unique: a create or an
	// update that would give a second record the same value is refused
	// with DUPLICATE_VALUE. Without it, two records can share a value and
	// an upsert by it answers 300.
	Unique []string
	// CaseSensitive are the unique fields that treat "ABC" and "abc" as
	// different values. Matching by external ID is case-sensitive unless
	// the field is unique and not listed here (Salesforce's default for a
	// unique field); SOQL's = is case-insensitive but on these.
	// https://developer.salesforce.com/docs/atlas.en-us.apexcode.meta/apexcode/langCon_apex_dml_examples_upsert.htm
	// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_comparisonoperators.htm
	CaseSensitive []string
}

// Client is a connected app's consumer key and secret.
type Client struct{ ID, Secret string }

// Options configure the fake.
type Options struct {
	// Objects are the sObjects served; at least one.
	Objects []Object
	// Clients may obtain tokens; at least one.
	Clients []Client
	// TokenLifetime is how long an access token works; Salesforce's
	// default session timeout is two hours, which is the default here.
	// Real sessions time out after inactivity; a fixed lifetime is the
	// harder case for a client, and what tests want.
	TokenLifetime time.Duration
	// BatchSize is the most records a query page holds (Salesforce: 2000,
	// the default).
	BatchSize int
	// Clock tells the time of tokens, record dates and query locators;
	// default the wall clock.
	Clock clock.Clock
}

// Endpoint names a kind of request, for counting.
type Endpoint string

// The endpoints the fake counts.
const (
	EndpointToken            Endpoint = "token"               // POST /services/oauth2/token
	EndpointUpsert           Endpoint = "upsert"              // PATCH sobjects/{Object}/{Field}/{value}
	EndpointReadByExternalID Endpoint = "read by external id" // GET sobjects/{Object}/{Field}/{value}
	EndpointRead             Endpoint = "read"                // GET sobjects/{Object}/{id}
	EndpointUpdate           Endpoint = "update"              // PATCH sobjects/{Object}/{id}
	EndpointCreate           Endpoint = "create"              // POST sobjects/{Object}
	EndpointQuery            Endpoint = "query"               // GET query?q=
	EndpointQueryMore        Endpoint = "query more"          // GET query/{locator}
	EndpointOther            Endpoint = "other"               // anything else
)

// Server is the fake Salesforce. Create it with New.
type Server struct {
	opts    Options
	now     func() time.Time
	objects map[string]*table // by lower-case name; the map and the tables' fields never change after New
	orgID   string
	userID  string

	mu       sync.Mutex // guards what follows, and the tables' records
	tokens   map[string]token
	refresh  map[string]string // refresh token → client id
	cursors  map[string]*cursor
	requests map[Endpoint]int
}

// New returns a fake serving opts.Objects to opts.Clients.
func New(opts Options) (*Server, error) {
	if len(opts.Objects) == 0 || len(opts.Clients) == 0 {
		return nil, errors.New("salesforce fake: give at least one object and one client")
	}
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = 2 * time.Hour
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 2000
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	s := &Server{
		opts: opts, now: opts.Clock.Now,
		objects: map[string]*table{}, tokens: map[string]token{}, refresh: map[string]string{},
		cursors: map[string]*cursor{}, requests: map[Endpoint]int{},
		orgID: randomID("00D"), userID: randomID("005"),
	}
	custom := 0
	for _, o := range opts.Objects {
		t, err := newTable(o, custom)
		if err != nil {
			return nil, fmt.Errorf("salesforce fake: %w", err)
		}
		if strings.HasSuffix(o.Name, "__c") && o.KeyPrefix == "" {
			custom++
		}
		if _, dup := s.objects[strings.ToLower(o.Name)]; dup {
			return nil, fmt.Errorf("salesforce fake: object %s is given twice", o.Name)
		}
		s.objects[strings.ToLower(o.Name)] = t
	}
	return s, nil
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if r.URL.Path == "/services/oauth2/token" {
		s.count(EndpointToken)
		s.serveToken(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/services/data/")
	if !ok {
		s.count(EndpointOther)
		notFound().write(w)
		return
	}
	version, rest, _ := strings.Cut(rest, "/")
	rt := route(r.Method, rest)
	s.count(rt.endpoint)
	major, ok := parseVersion(version)
	if !ok || rt.serve == nil {
		notFound().write(w)
		return
	}
	if f := s.authorize(r); f != nil {
		f.write(w)
		return
	}
	status, body := rt.serve(s, r, call{version: version, major: major, segs: rt.segs})
	if body == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, body)
}

func (s *Server) count(e Endpoint) {
	s.mu.Lock()
	s.requests[e]++
	s.mu.Unlock()
}

// Requests returns how many requests reached each endpoint so far.
func (s *Server) Requests() map[Endpoint]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests)
}

// TokenRequests returns how many requests reached the token endpoint,
// granted or not.
func (s *Server) TokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[EndpointToken]
}
