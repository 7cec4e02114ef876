package connector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// Call is what one outgoing request did: the attempt log's row, before the
// engine adds who and when.
type Call struct {
	Operation      string // e.g. deal.create
	IdempotencyKey string
	HTTPCode       int
	Duration       time.Duration
	Class          Class
	Ambiguous      bool
	RetryAfter     time.Duration
	ExternalID     string   // the provider's id of the object created, updated or found
	Found          []string // lookup: the ids of every object carrying the key
	Error          string   // a short reason in words, redacted
	Request        string   // redacted excerpt
	Response       string   // redacted excerpt
}

// Page is one page of a provider's objects.
type Page struct {
	Items      []map[string]any
	NextCursor string
}

// maxBody bounds what is read of a provider's answer.
const maxBody = 4 << 20

// excerptLen bounds the request and response excerpts in the attempt log.
const excerptLen = 2048

// excerptBody bounds what is redacted of a body for an excerpt: enough to
// fill one even when masks shorten what they hide, and no more, so that an
// excerpt of a body of megabytes costs what one of kilobytes does.
const excerptBody = 4 * excerptLen

// errorBody bounds what is redacted of an error answer for the error column.
const errorBody = 1024

// HTTP is the connector for any JSON-over-HTTP provider, driven by its
// config.Service. Safe for concurrent use.
type HTTP struct {
	name    string
	svc     config.Service
	headers http.Header
	client  *http.Client
	redact  *redact.Redactor
	now     func() time.Time
}

// NewHTTP builds the connector of a service. Headers' ${VAR} references are
// expanded here, once; the values stay in memory only, and r learns them
// (with the service's other secrets, see config.Service.Secrets), so that a
// provider quoting a credential back has it masked wherever r redacts.
func NewHTTP(name string, svc config.Service, r *redact.Redactor, transport http.RoundTripper) *HTTP {
	h := svc.ExpandedHeaders()
	r.AddSecrets(svc.Secrets()...)
	if transport == nil {
		transport = &http.Transport{MaxIdleConnsPerHost: 128, IdleConnTimeout: 90 * time.Second,
			ResponseHeaderTimeout: svc.Timeout}
	}
	return &HTTP{name: name, svc: svc, headers: h, redact: r, now: time.Now,
		client: &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect on a write is the provider's problem to report, not ours to follow
		}}}
}

// CanLookup reports whether the service can find an object by our key.
func (c *HTTP) CanLookup(localType string) bool { return c.svc.Objects[localType].Lookup != "" }

// CanList reports whether the service can list its objects.
func (c *HTTP) CanList(localType string) bool { return c.svc.Objects[localType].List != "" }

// Create asks the provider to create an object from body, carrying the
// idempotency key when the service honours one.
func (c *HTTP) Create(ctx context.Context, localType string, body []byte, idemKey string) Call {
	obj := c.svc.Objects[localType]
	hdr := http.Header{}
	if c.svc.IdempotencyHeader != "" && idemKey != "" {
		hdr.Set(c.svc.IdempotencyHeader, idemKey)
	}
	call, resp := c.do(ctx, obj.Remote+".create", obj.Create, nil, body, hdr)
	call.IdempotencyKey = idemKey
	if call.Class == OK {
		call.ExternalID = stringAt(resp, obj.IDField)
		if call.ExternalID == "" {
			// A 2xx says the provider took the create (202, 204) or made the
			// object and put its id where we do not read it: the object may
			// exist. Ambiguous, so that the next attempt looks it up by key,
			// or re-sends with the same Idempotency-Key, before any new create.
			call.Class, call.Ambiguous = Temporary, true
			call.Error = fmt.Sprintf("the provider answered HTTP %d without the new object's id (no %q field in its answer); it may have created the object",
				call.HTTPCode, obj.IDField)
		}
	}
	return call
}

// Update sends the full desired state of an existing object.
func (c *HTTP) Update(ctx context.Context, localType, externalID string, body []byte) Call {
	obj := c.svc.Objects[localType]
	call, resp := c.do(ctx, obj.Remote+".update", obj.Update, map[string]string{"external_id": externalID}, body, nil)
	if call.Class == OK {
		call.ExternalID = externalID
		if id := stringAt(resp, obj.IDField); id != "" {
			call.ExternalID = id
		}
	}
	return call
}

// Lookup finds every object carrying our key. Only a 404 or an explicitly
// empty list means none: "none" lets the engine create, so an answer the
// connector cannot read is a temporary failure, never an empty result.
func (c *HTTP) Lookup(ctx context.Context, localType, key string) Call {
	obj := c.svc.Objects[localType]
	call, resp := c.do(ctx, obj.Remote+".lookup", obj.Lookup, map[string]string{"external_key": key}, nil, nil)
	if call.HTTPCode == http.StatusNotFound {
		call.Class, call.Error = OK, ""
		return call
	}
	if call.Class != OK {
		return call
	}
	found, err := carrying(resp, obj, key)
	if err != nil {
		call.Class, call.Error = Temporary, "the lookup's answer was not understood: "+err.Error()
		return call
	}
	call.Found = found
	if len(found) == 1 {
		call.ExternalID = found[0]
	}
	return call
}

// carrying returns the ids of the objects in a lookup answer whose key is
// exactly key: a provider's search may be loose. An answer it cannot read
// is an error: a list of another shape, one object without the key field,
// an object whose key cannot be read, or one carrying key without an id.
func carrying(resp any, obj config.Object, key string) ([]string, error) {
	list, ok := listItems(resp)
	if !ok {
		m, isObject := resp.(map[string]any)
		if !isObject || valueAt(m, obj.KeyField) == nil {
			return nil, fmt.Errorf("expected %s, or one object with a %q field", listShapes, obj.KeyField)
		}
		list = []map[string]any{m}
	}
	var ids []string
	for _, item := range list {
		// Of an object whose key cannot be read, whether it is ours cannot
		// be told; taking it for someone else's could hide the object a
		// lost create made.
		switch v := valueAt(item, obj.KeyField).(type) {
		case nil:
			return nil, fmt.Errorf("an object in the list has no %q field", obj.KeyField)
		case string, json.Number:
			if fmt.Sprint(v) != key {
				continue
			}
		default:
			return nil, fmt.Errorf("an object's %q field is not text", obj.KeyField)
		}
		id := stringAt(item, obj.IDField)
		if id == "" {
			return nil, fmt.Errorf("an object carrying the key has no %q field with its id", obj.IDField)
		}
		// One object listed twice (a search that matches it on two fields)
		// is still one object, not a duplicate for a person to resolve.
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// List reads one page of the provider's objects. A page it cannot read is a
// temporary failure, not a page of one odd object: reconciliation takes what
// a listing lacks for objects the provider lost, and creates them anew.
func (c *HTTP) List(ctx context.Context, localType, cursor string) (Page, Call) {
	obj := c.svc.Objects[localType]
	call, resp := c.do(ctx, obj.Remote+".list", obj.List, map[string]string{"cursor": cursor}, nil, nil)
	var p Page
	if call.Class != OK {
		return p, call
	}
	list, ok := listItems(resp)
	if !ok {
		call.Class, call.Error = Temporary, "the list's answer was not understood: expected "+listShapes
		return p, call
	}
	p.Items = list
	if m, ok := resp.(map[string]any); ok {
		p.NextCursor, _ = m["next_cursor"].(string)
	}
	return p, call
}

// do sends one request and classifies what came back. The request body is
// deliberately not replayable: Go's transport silently re-sends a request
// that has an Idempotency-Key header when a reused connection drops, and
// then one logged attempt would hide two sends. Without GetBody it cannot,
// so every send is one attempt in the log.
func (c *HTTP) do(ctx context.Context, op, endpoint string, vars map[string]string, body []byte, extra http.Header) (Call, any) {
	call := Call{Operation: op}
	red := c.redact
	if body != nil {
		// The body is the record's payload: its secrets (a password under
		// its key) must not come back in the provider's words either.
		red = red.ForPayload(body)
	}
	ep, err := config.ParseEndpoint(endpoint)
	if err != nil {
		call.Class, call.Error = Permanent, "misconfigured endpoint: "+err.Error()
		return call, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.svc.Timeout)
	defer cancel()
	var wrote bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { wrote = i.Err == nil },
	})
	req, err := http.NewRequestWithContext(ctx, ep.Method, c.svc.BaseURL+fill(ep.Path, vars), nil)
	if err != nil {
		call.Class, call.Error = Permanent, "bad request URL: "+err.Error()
		return call, nil
	}
	for k, v := range c.headers {
		req.Header[k] = v
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "syncdesk")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	call.Request = excerpt(red, req.Method+" "+req.URL.RequestURI(), req.Header, body)
	keyed := c.svc.IdempotencyHeader != "" && req.Header.Get(c.svc.IdempotencyHeader) != ""

	start := c.now()
	res, err := c.client.Do(req)
	call.Duration = c.now().Sub(start)
	if err != nil {
		call.Class, call.Ambiguous = Classify(0, err, wrote, keyed)
		call.Error = red.Text(Describe(err, wrote, c.svc.Timeout))
		return call, nil
	}
	defer res.Body.Close()
	raw, readErr := io.ReadAll(io.LimitReader(res.Body, maxBody))
	call.HTTPCode = res.StatusCode
	call.Class, call.Ambiguous = Classify(res.StatusCode, nil, true, keyed)
	call.Response = excerpt(red, res.Proto+" "+res.Status, res.Header, raw)
	if call.Class == OK && readErr != nil {
		// The provider said yes but the body was cut: the object exists, its id is unknown.
		call.Class, call.Ambiguous = Temporary, true
		call.Error = "the answer was cut off; whether it took effect is unknown"
		return call, nil
	}
	var decoded any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&decoded)
	if call.Class != OK {
		call.RetryAfter = RetryAfter(res.Header.Get("Retry-After"), c.now(), c.svc.Retry.Max)
		msg := fmt.Sprintf("HTTP %d: %s", res.StatusCode, providerMessage(decoded, raw))
		call.Error = red.Excerpt(red.TextPrefix(msg, errorBody), 300)
	}
	return call, decoded
}

// excerpt renders a request or response for the attempt log, redacted first
// and cut after, so that a cut can never expose half a secret to the
// patterns. Of a long body only the first excerptBody bytes are redacted,
// in a way that is safe at the cut (see redact.JSONPrefix).
func excerpt(r *redact.Redactor, line string, h http.Header, body []byte) string {
	var b strings.Builder
	b.WriteString(r.Text(line))
	b.WriteString("\n")
	b.WriteString(r.Headers(h))
	if len(body) > 0 {
		b.WriteString("\n\n")
		b.Write(r.JSONPrefix(body, excerptBody))
	}
	return r.Excerpt(b.String(), excerptLen)
}

// fill substitutes {name} in a path template, escaping each value for where
// it stands: the path or the query.
func fill(tmpl string, vars map[string]string) string {
	path, query, hasQuery := strings.Cut(tmpl, "?")
	for k, v := range vars {
		path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(v))
		query = strings.ReplaceAll(query, "{"+k+"}", url.QueryEscape(v))
	}
	if hasQuery {
		return path + "?" + query
	}
	return path
}

// providerMessage picks the provider's own words out of an error answer.
func providerMessage(decoded any, raw []byte) string {
	if m, ok := decoded.(map[string]any); ok {
		for _, k := range []string{"error", "message", "detail", "error_description"} {
			switch v := m[k].(type) {
			case string:
				return v
			case map[string]any:
				if s, ok := v["message"].(string); ok {
					return s
				}
			}
		}
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return http.StatusText(0)
	}
	return s
}

// listShapes names, for an error, the list answers the connector reads.
const listShapes = `a list ([…], {"items":[…]} or {"data":[…]})`

// listItems reads a list answer: a bare array, {"items": […]} or
// {"data": […]} (null there is an empty list), every element an object. It reports false for anything
// else, so that an answer of another shape is never read as an empty list.
func listItems(v any) ([]map[string]any, bool) {
	var list []any
	switch t := v.(type) {
	case []any:
		list = t
	case map[string]any:
		found := false
		for _, k := range []string{"items", "data"} {
			v, present := t[k]
			switch l := v.(type) {
			case []any:
				list, found = l, true
			case nil:
				found = present // Go writes an empty (nil) slice as null
			}
			if found {
				break
			}
		}
		if !found {
			return nil, false
		}
	default:
		return nil, false
	}
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

// valueAt reads a dotted path ("id", "data.id") from a decoded JSON value.
func valueAt(v any, path string) any {
	for _, part := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

func stringAt(v any, path string) string {
	switch x := valueAt(v, path).(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}
