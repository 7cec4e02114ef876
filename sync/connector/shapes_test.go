package connector

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// recorder is a provider that answers from a table and remembers what it
// was sent.
type recorder struct {
	mu     sync.Mutex
	got    []*http.Request
	bodies []string
	answer func(r *http.Request, body string) (int, string)
}

func (p *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.got, p.bodies = append(p.got, r), append(p.bodies, string(b))
	p.mu.Unlock()
	status, body := p.answer(r, string(b))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (p *recorder) last() (*http.Request, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got[len(p.got)-1], p.bodies[len(p.bodies)-1]
}

func serve(t *testing.T, answer func(r *http.Request, body string) (int, string)) (*recorder, string) {
	p := &recorder{answer: answer}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func provider(base string, o config.Object) config.Service {
	if o.ExternalKey == "" {
		o.ExternalKey = "customer_{local_id}"
	}
	if o.Remote == "" {
		o.Remote = "customer"
	}
	return config.Service{Kind: "http", BaseURL: base, Timeout: 5 * time.Second,
		Retry:   config.Retry{MaxAttempts: 3, Base: time.Second, Max: time.Minute},
		Objects: map[string]config.Object{"customer": o}}
}

func rec(payload string) Record {
	return Record{LocalType: "customer", LocalID: "7", Key: "customer_7", Payload: []byte(payload)}
}

func TestAFormBodyIsBuiltByTheMapping(t *testing.T) {
	p, base := serve(t, func(*http.Request, string) (int, string) { return 200, `{"id":"cus_1"}` })
	c := NewHTTP("stripe", provider(base, config.Object{Encoding: "form", IDField: "id", KeyField: "metadata.syncdesk_key",
		Create: "POST /v1/customers", Update: "POST /v1/customers/{external_id}",
		Body: config.Body{Fields: map[string]string{"email": ".email", "metadata.syncdesk_key": "$key", "metadata.plan": `"gold"`}}}),
		redact.New(nil), nil)

	call := c.Create(context.Background(), rec(`{"email":"a@example.com","ignored":1}`), "customer-7-create")
	require.Equal(t, OK, call.Class, call.Error)
	require.Equal(t, "cus_1", call.ExternalID)
	r, body := p.last()
	require.Equal(t, "application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
	form, err := url.ParseQuery(body)
	require.NoError(t, err)
	require.Equal(t, url.Values{"email": {"a@example.com"}, "metadata[syncdesk_key]": {"customer_7"}, "metadata[plan]": {"gold"}}, form)

	up := c.Update(context.Background(), Record{LocalType: "customer", LocalID: "7", Key: "customer_7", ExternalID: "cus_1", Payload: []byte(`{"email":"b@example.com"}`)})
	require.Equal(t, OK, up.Class, up.Error)
	r, _ = p.last()
	require.Equal(t, "/v1/customers/cus_1", r.URL.Path)
}

func TestARecordTheMappingCannotReadFailsInWordsAndSendsNothing(t *testing.T) {
	p, base := serve(t, func(*http.Request, string) (int, string) { return 200, `{"id":"x"}` })
	c := NewHTTP("stripe", provider(base, config.Object{Encoding: "form", IDField: "id", Create: "POST /v1/customers", Update: "POST /v1/customers/{external_id}",
		Body: config.Body{Fields: map[string]string{"email": ".email"}}}), redact.New(nil), nil)
	call := c.Create(context.Background(), rec(`{"name":"no email here"}`), "k")
	require.Equal(t, Permanent, call.Class)
	require.Contains(t, call.Error, "email")
	require.Contains(t, call.Error, "could not be built from the record")
	require.Empty(t, p.got, "no request with a half-built body")
}

func TestUpsertCreatesUpdatesAndNamesSeveralRecords(t *testing.T) {
	var status int
	var body string
	_, base := serve(t, func(r *http.Request, _ string) (int, string) { return status, body })
	c := NewHTTP("salesforce", provider(base, config.Object{IDField: "Id|id", KeyField: "Key__c",
		Upsert: "PATCH /services/data/v60.0/sobjects/Account/Key__c/{external_key}", Body: config.Body{Expr: "."}}), redact.New(nil), nil)
	ctx := context.Background()

	status, body = 201, `{"id":"001A","success":true,"errors":[],"created":true}`
	call := c.Upsert(ctx, rec(`{"Name":"Acme"}`))
	require.Equal(t, OK, call.Class, call.Error)
	require.Equal(t, "001A", call.ExternalID)

	status, body = 204, ``
	r := rec(`{"Name":"Acme"}`)
	r.ExternalID = "001A"
	call = c.Upsert(ctx, r)
	require.Equal(t, OK, call.Class, call.Error)
	require.Equal(t, "001A", call.ExternalID, "a 204 keeps the id already known")
	call = c.Upsert(ctx, rec(`{"Name":"Acme"}`))
	require.Equal(t, Temporary, call.Class, "a 204 with no id known yet is not a success")

	status, body = 300, `["/services/data/v60.0/sobjects/Account/001A","/services/data/v60.0/sobjects/Account/001B"]`
	call = c.Upsert(ctx, rec(`{"Name":"Acme"}`))
	require.Equal(t, Permanent, call.Class)
	require.Equal(t, []string{"001A", "001B"}, call.Found)
}

// A 409 naming an existing object is adopted only when the lookup by our
// key finds that object carrying the key: HubSpot answers a taken email with
// the same 409 as a taken key, naming somebody else's contact.
func TestAConflictNamingTheObjectAdoptsItOnlyWhenItCarriesOurKey(t *testing.T) {
	const conflict = `{"status":"error","message":"Contact already exists. Existing ID: 5101","category":"CONFLICT"}`
	for _, tc := range []struct {
		name, lookup, consistency string
		status                    int // the lookup's answer
		body                      string
		class                     Class
		id, says                  string
	}{
		{"ours", "GET /c/{external_key}", "", 200, `{"id":"5101","properties":{"syncdesk_key":"customer_7"}}`, OK, "5101", "adopted"},
		{"somebody else's", "GET /c/{external_key}", "", 404, `{"message":"resource not found"}`, Permanent, "",
			"hubspot already has customer 5101 with a value of this record that must be unique (such as its email), and it is not one of ours (it does not carry our key customer_7)"},
		{"ours under another id", "GET /c/{external_key}", "", 200, `{"id":"77","properties":{"syncdesk_key":"customer_7"}}`, OK, "77", "adopted"},
		{"lookup failing", "GET /c/{external_key}", "", 503, `{"message":"down"}`, Temporary, "", "failed (HTTP 503: down)"},
		{"a search that lags", "GET /c/{external_key}", "eventual", 200, `{"results":[]}`, Temporary, "", "does not show it yet"},
		{"no lookup", "", "", 0, "", Permanent, "", "cannot look our key customer_7 up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base := serve(t, func(r *http.Request, _ string) (int, string) {
				if r.Method == http.MethodPost {
					return 409, conflict
				}
				return tc.status, tc.body
			})
			c := NewHTTP("hubspot", provider(base, config.Object{IDField: "id", KeyField: "properties.syncdesk_key",
				Create: "POST /crm/v3/objects/contacts", Update: "PATCH /crm/v3/objects/contacts/{external_id}",
				Lookup: tc.lookup, LookupConsistency: tc.consistency, Items: "results",
				Conflict: &config.Conflict{Status: 409, IDPattern: `Existing ID: ?(\d+)`}}), redact.New(nil), nil)
			call := c.Create(context.Background(), rec(`{"email":"a@example.com"}`), "")
			require.Equal(t, tc.class, call.Class, call.Error)
			require.False(t, call.Ambiguous, "a refused create made nothing")
			require.Equal(t, tc.id, call.ExternalID)
			require.Contains(t, call.Error, tc.says)
		})
	}

	_, base := serve(t, func(*http.Request, string) (int, string) { return 409, conflict })
	other := NewHTTP("hubspot", provider(base, config.Object{IDField: "id", Create: "POST /x", Update: "PATCH /x/{external_id}"}), redact.New(nil), nil)
	require.Equal(t, Permanent, other.Create(context.Background(), rec(`{}`), "").Class, "without a conflict setting a 409 is a refusal")
}

func TestASearchLookupPostsItsBodyAndReadsItsList(t *testing.T) {
	p, base := serve(t, func(*http.Request, string) (int, string) {
		return 200, `{"total":2,"results":[{"id":"1","properties":{"syncdesk_key":"customer_7"}},{"id":"2","properties":{"syncdesk_key":"customer_70"}}]}`
	})
	c := NewHTTP("hubspot", provider(base, config.Object{IDField: "id", KeyField: "properties.syncdesk_key", Items: "results",
		Create: "POST /x", Update: "PATCH /x/{external_id}", Lookup: "POST /crm/v3/objects/contacts/search",
		LookupBody: `{filterGroups: [{filters: [{propertyName: "syncdesk_key", operator: "EQ", value: $key}]}]}`}), redact.New(nil), nil)
	call := c.Lookup(context.Background(), "customer", "customer_7")
	require.Equal(t, OK, call.Class, call.Error)
	require.Equal(t, []string{"1"}, call.Found, "only the exact key counts")
	r, body := p.last()
	require.Equal(t, http.MethodPost, r.Method)
	var sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &sent))
	require.Equal(t, "customer_7", sent["filterGroups"].([]any)[0].(map[string]any)["filters"].([]any)[0].(map[string]any)["value"])
}

func TestEachPagingStyleWalksToTheEnd(t *testing.T) {
	pages := map[string]string{
		"starting_after:":   `{"object":"list","data":[{"id":"c3"},{"id":"c2"}],"has_more":true}`,
		"starting_after:c2": `{"object":"list","data":[{"id":"c1"}],"has_more":false}`,
		"cursor:":           `{"results":[{"id":"1"}],"paging":{"next":{"after":"AB"}}}`,
		"cursor:AB":         `{"results":[{"id":"2"}]}`,
		"next_url:":         `{"done":false,"nextRecordsUrl":"/services/data/v60.0/query/01g-2","records":[{"Id":"001A"}]}`,
		"next_url:01g-2":    `{"done":true,"records":[{"Id":"001B"}]}`,
	}
	_, base := serve(t, func(r *http.Request, _ string) (int, string) {
		q := r.URL.Query()
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/"):
			return 200, pages["starting_after:"+q.Get("starting_after")]
		case strings.HasPrefix(r.URL.Path, "/crm/"):
			return 200, pages["cursor:"+q.Get("after")]
		case strings.HasSuffix(r.URL.Path, "/query"):
			if q.Get("q") != "SELECT Id, Key__c FROM Account" {
				return 400, `[{"message":"bad query ` + q.Get("q") + `","errorCode":"MALFORMED_QUERY"}]`
			}
			return 200, pages["next_url:"]
		}
		return 200, pages["next_url:"+r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]]
	})
	for _, tc := range []struct {
		o    config.Object
		want []string
	}{
		{config.Object{List: "GET /v1/customers?limit=100&starting_after={cursor}", Items: "data", IDField: "id",
			Paging: config.Paging{Style: "starting_after"}}, []string{"c3", "c2", "c1"}},
		{config.Object{List: "GET /crm/v3/objects/contacts?after={cursor}", Items: "results", IDField: "id",
			Paging: config.Paging{Cursor: "paging.next.after"}}, []string{"1", "2"}},
		{config.Object{List: "GET /services/data/v60.0/query?q=SELECT Id, Key__c FROM Account", Items: "records", IDField: "Id|id",
			Paging: config.Paging{Style: "next_url", NextURL: "nextRecordsUrl"}}, []string{"001A", "001B"}},
	} {
		tc.o.Create, tc.o.Update = "POST /x", "PUT /x/{external_id}"
		c := NewHTTP("p", provider(base, tc.o), redact.New(nil), nil)
		var ids []string
		for cursor, n := "", 0; n < 5; n++ {
			page, call := c.List(context.Background(), "customer", cursor)
			require.Equal(t, OK, call.Class, call.Error)
			for _, it := range page.Items {
				ids = append(ids, tc.o.IDOf(it))
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		require.Equal(t, tc.want, ids, tc.o.List)
	}
}

func TestANextPageOnAnotherHostIsRefused(t *testing.T) {
	_, base := serve(t, func(*http.Request, string) (int, string) { return 200, `{"records":[]}` })
	c := NewHTTP("p", provider(base, config.Object{List: "GET /q", Items: "records", Create: "POST /x", Update: "PUT /x/{external_id}",
		Paging: config.Paging{Style: "next_url", NextURL: "nextRecordsUrl"}}), redact.New(nil), nil)
	_, call := c.List(context.Background(), "customer", "https://evil.example/steal")
	require.Equal(t, Permanent, call.Class)
	require.Contains(t, call.Error, "another host")
}

func TestFillLeavesOutEmptyPlaceholdersAndEncodesTheQuery(t *testing.T) {
	for tmpl, want := range map[string]string{
		"/v1/customers?limit=100&starting_after={cursor}": "/v1/customers?limit=100",
		"/q?q=SELECT Id FROM Account":                     "/q?q=SELECT+Id+FROM+Account",
		"/s?query=metadata['k']:'{external_key}'":         "/s?query=metadata%5B%27k%27%5D%3A%27a%26b%27",
		"/deals/{external_key}?idProperty=key":            "/deals/a&b?idProperty=key",
	} {
		require.Equal(t, want, fill(tmpl, map[string]string{"cursor": "", "external_key": "a&b"}), tmpl)
	}
}

// A key placed inside quotes in a query (Stripe's search, SOQL) has its
// quotes and backslashes escaped with a backslash, so that a key such as
// customer_O'Brien stays one value; elsewhere it is only URL-encoded.
func TestFillEscapesQuotesInAQuotedPlaceholder(t *testing.T) {
	key := `customer_O'Brien\"x`
	for tmpl, want := range map[string]string{
		"/s?query=metadata['k']:'{external_key}'": `metadata['k']:'customer_O\'Brien\\"x'`,
		`/s?query=metadata["k"]:"{external_key}"`: `metadata["k"]:"customer_O'Brien\\\"x"`,
		"/s?ref={external_key}":                   `customer_O'Brien\"x`,
	} {
		u, err := url.Parse(fill(tmpl, map[string]string{"external_key": key}))
		require.NoError(t, err)
		got := u.Query().Get("query")
		if got == "" {
			got = u.Query().Get("ref")
		}
		require.Equal(t, want, got, tmpl)
	}
}

// Without a body mapping a form-encoded object sends the payload as it is,
// with our key at key_field, in form encoding like the rest.
func TestAFormBodyWithoutAMappingIsThePayloadWithTheKey(t *testing.T) {
	p, base := serve(t, func(*http.Request, string) (int, string) { return 200, `{"id":"cus_1"}` })
	c := NewHTTP("stripe", provider(base, config.Object{Encoding: "form", IDField: "id", KeyField: "metadata.syncdesk_key",
		Create: "POST /v1/customers", Update: "POST /v1/customers/{external_id}"}), redact.New(nil), nil)
	call := c.Create(context.Background(), rec(`{"email":"a@example.com","balance":12345678901234567890}`), "k")
	require.Equal(t, OK, call.Class, call.Error)
	_, body := p.last()
	require.Equal(t, "balance=12345678901234567890&email=a%40example.com&metadata[syncdesk_key]=customer_7", body)
}

// A record's secret, renamed by the mapping and form-encoded, is masked in
// the request excerpt and in a provider's answer that quotes it.
func TestARecordSecretInAMappedFormBodyIsMasked(t *testing.T) {
	_, base := serve(t, func(_ *http.Request, body string) (int, string) {
		form, _ := url.ParseQuery(body)
		return 400, `{"error":{"message":"pin ` + form.Get("metadata[pin]") + ` is not accepted"}}`
	})
	c := NewHTTP("stripe", provider(base, config.Object{Encoding: "form", IDField: "id", Create: "POST /v1/customers",
		Update: "POST /v1/customers/{external_id}", Body: config.Body{Fields: map[string]string{"metadata.pin": ".password", "email": ".email"}}}),
		redact.New(nil), nil)
	call := c.Create(context.Background(), rec(`{"email":"a@example.com","password":"s3cret pin/42&x"}`), "k")
	require.Equal(t, Permanent, call.Class)
	for what, s := range map[string]string{"request": call.Request, "response": call.Response, "error": call.Error} {
		require.NotContains(t, s, "s3cret", what)
		require.NotContains(t, s, "pin%2F42", what)
	}
	require.Contains(t, call.Error, "is not accepted")
}
