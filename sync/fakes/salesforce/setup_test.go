package salesforce

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/clock"
)

const (
	clientID     = "3MVG9-consumer-key"
	clientSecret = "s3cret+/=" // characters a Basic header must escape
)

// bundle is what a test needs: the fake, a real server in front of it and
// the fake's clock.
type bundle struct {
	fake  *Server
	srv   *httptest.Server
	clock *clock.Fake
}

// testObjects are Account (external ID Key__c, not unique), Contact and a
// custom object whose external ID is unique.
func testObjects() []Object {
	return []Object{
		{Name: "Account", Fields: []string{"Name", "Key__c", "Type", "BillingCity"}, ExternalIDs: []string{"Key__c"}},
		{Name: "Contact", Fields: []string{"LastName", "Email", "Key__c"}, ExternalIDs: []string{"Key__c", "Email"}},
		{Name: "Invoice__c", Fields: []string{"Key__c", "Amount__c"}, ExternalIDs: []string{"Key__c"}, Unique: []string{"Key__c"}},
	}
}

// setup starts the fake behind a real httptest server; edit changes the
// options first, and wrap (if given) puts something in front of it.
func setup(t *testing.T, edit func(*Options), wrap func(http.Handler) http.Handler) bundle {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	opts := Options{Objects: testObjects(), Clients: []Client{{ID: clientID, Secret: clientSecret}}, Clock: clk}
	if edit != nil {
		edit(&opts)
	}
	fake, err := New(opts)
	require.NoError(t, err)
	var h http.Handler = fake
	if wrap != nil {
		h = wrap(fake)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return bundle{fake: fake, srv: srv, clock: clk}
}

// answer is a response read in full.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the answer's body into v.
func (a answer) json(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(a.body, v), "body: %s", a.body)
}

// send makes one request with a bearer token (if any) and a JSON body (if
// any).
func (b bundle) send(t *testing.T, method, path, tok, body string) answer {
	t.Helper()
	a, err := b.try(method, path, tok, body, nil)
	require.NoError(t, err)
	return a
}

// try is send that reports a failed round trip instead of failing.
func (b bundle) try(method, path, tok, body string, client *http.Client) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, rd)
	if err != nil {
		return answer{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if client == nil {
		client = b.srv.Client()
	}
	res, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, header: res.Header, body: raw}, err
}

// postForm posts a token request.
func (b bundle) postForm(t *testing.T, form url.Values, basicID, basicSecret string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/services/oauth2/token", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicID != "" {
		req.SetBasicAuth(url.QueryEscape(basicID), url.QueryEscape(basicSecret))
	}
	res, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return answer{status: res.StatusCode, header: res.Header, body: raw}
}

// token gets an access token by the client credentials flow.
func (b bundle) token(t *testing.T) string {
	t.Helper()
	a := b.postForm(t, url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {clientSecret}}, "", "")
	require.Equal(t, http.StatusOK, a.status, "token request: %s", a.body)
	var tok tokenAnswer
	a.json(t, &tok)
	require.NotEmpty(t, tok.AccessToken)
	return tok.AccessToken
}

// errorsOf decodes Salesforce's error array.
func errorsOf(t *testing.T, a answer) []apiError {
	t.Helper()
	var errs []apiError
	a.json(t, &errs)
	require.NotEmpty(t, errs, "an error answer carries at least one error")
	return errs
}

const v60 = "/services/data/v60.0"

// readJSON decodes a response's body into v and closes it.
func readJSON(t *testing.T, res *http.Response, v any) {
	t.Helper()
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NoError(t, json.NewDecoder(res.Body).Decode(v))
}
