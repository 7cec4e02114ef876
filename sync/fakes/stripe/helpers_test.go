package stripe

import (
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
)

const testKey = "sk_test_helper4242"

// clock is a fake clock tests advance.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// answer is one response, decoded.
type answer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// errField reads error.<name> from an error answer.
func (a answer) errField(name string) any {
	e, _ := a.body["error"].(map[string]any)
	return e[name]
}

// client talks to a fake or to stripe-mock.
type client struct {
	t    testing.TB
	base string
	key  string
}

// setup starts a fake behind httptest with a fake clock.
func setup(t testing.TB, opts Options) (*Server, *client, *clock) {
	t.Helper()
	clk := newClock()
	if opts.Now == nil {
		opts.Now = clk.Now
	}
	s := New(opts)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, &client{t: t, base: srv.URL, key: testKey}, clk
}

// do sends a request: form values go in the body of a POST and in the
// query of a GET; headers come as name, value pairs.
func (c *client) do(method, path string, form url.Values, headers ...string) answer {
	c.t.Helper()
	target, body := c.base+path, ""
	if method == http.MethodGet && len(form) > 0 {
		target += "?" + form.Encode()
	} else if len(form) > 0 {
		body = form.Encode()
	}
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	require.NoError(c.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.send(req)
}

// send runs req and decodes the answer.
func (c *client) send(req *http.Request) answer {
	c.t.Helper()
	res, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	a := answer{status: res.StatusCode, header: res.Header, raw: raw}
	require.NoError(c.t, json.Unmarshal(raw, &a.body), "answers are JSON: %s", raw)
	return a
}

// ok requires a 200 and returns the body.
func (c *client) ok(method, path string, form url.Values, headers ...string) map[string]any {
	c.t.Helper()
	a := c.do(method, path, form, headers...)
	require.Equal(c.t, http.StatusOK, a.status, "%s %s: %s", method, path, a.raw)
	return a.body
}

// ids lists the ids of a list or search answer's data.
func ids(body map[string]any) []string {
	data, _ := body["data"].([]any)
	out := make([]string, len(data))
	for i, d := range data {
		out[i], _ = d.(map[string]any)["id"].(string)
	}
	return out
}

// form builds url.Values from name, value pairs.
func form(pairs ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		v.Add(pairs[i], pairs[i+1])
	}
	return v
}
