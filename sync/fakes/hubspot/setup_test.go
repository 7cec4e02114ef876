package hubspot

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syncdesk/syncdesk/sync/clock"
)

// bundle is what a test needs: the fake, a real server in front of it and
// the clock the fake reads.
type bundle struct {
	fake  *Fake
	srv   *httptest.Server
	clock *clock.Fake
}

const testToken = "pat-na1-test"

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// setup starts a fake with opts on a real server, on a fake clock unless
// opts.Now is set, with a custom unique property syncdesk_key on every
// standard type unless opts.Properties is set.
func setup(t *testing.T, opts Options) *bundle {
	t.Helper()
	b := &bundle{clock: clock.NewFake(t0)}
	if opts.Now == nil {
		opts.Now = b.clock.Now
	}
	if opts.Properties == nil {
		key := []Property{{Name: "syncdesk_key", Unique: true}, {Name: "note"}}
		opts.Properties = map[string][]Property{"contacts": key, "companies": key, "deals": key}
	}
	b.fake = New(opts)
	b.srv = httptest.NewServer(b.fake)
	t.Cleanup(b.srv.Close)
	return b
}

// answer is one answer as a test reads it.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// call sends a request with testToken.
func (b *bundle) call(t *testing.T, method, path string, body any) answer {
	t.Helper()
	return b.callAs(t, testToken, method, path, body)
}

// callAs sends a request with token ("" sends none); a string body is
// sent as it is, anything else as JSON.
func (b *bundle) callAs(t *testing.T, token, method, path string, body any) answer {
	t.Helper()
	a, err := b.send(token, method, path, body)
	require.NoError(t, err)
	return a
}

// send is callAs for goroutines, which must not call require.
func (b *bundle) send(token, method, path string, body any) (answer, error) {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(v)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, rd)
	if err != nil {
		return answer{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := b.srv.Client().Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			return a, err
		}
	}
	return a, nil
}

// props is a create or update body.
func props(kv ...string) map[string]any {
	p := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return map[string]any{"properties": p}
}

// prop reads one property of an object answer.
func (a answer) prop(name string) any {
	p, _ := a.body["properties"].(map[string]any)
	return p[name]
}

// ids lists the ids of a page's results.
func (a answer) ids() []string {
	var out []string
	results, _ := a.body["results"].([]any)
	for _, r := range results {
		out = append(out, r.(map[string]any)["id"].(string))
	}
	return out
}

// after is a page's next cursor, "" on the last page.
func (a answer) after() string {
	paging, ok := a.body["paging"].(map[string]any)
	if !ok {
		return ""
	}
	return paging["next"].(map[string]any)["after"].(string)
}
