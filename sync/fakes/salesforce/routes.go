package salesforce

import (
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The resources under /services/data/vXX.X/ the fake serves: sObject Basic
// Information (create), sObject Rows (read, update), sObject Rows by
// External ID (read, upsert), Query and Query More Results.
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_list.htm

// call is what a handler needs from the path: the API version it was called
// with (answers' URLs repeat it) and the path's segments after the version.
type call struct {
	version string // "v60.0"
	major   int    // 60
	segs    []string
}

// base is the path of the version's resources, for the URLs answers give.
func (c call) base() string { return "/services/data/" + c.version }

// handler serves one resource and returns the answer's status and body (a
// nil body sends none).
type handler func(s *Server, r *http.Request, c call) (int, any)

// target is what one method on one resource does.
type target struct {
	endpoint Endpoint
	serve    handler
}

// routed is where a request goes.
type routed struct {
	target
	segs []string
}

// route finds the handler of method on rest, the escaped path after the
// version.
func route(method, rest string) routed {
	segs, ok := segments(rest)
	if !ok {
		return routed{target: target{endpoint: EndpointOther}}
	}
	methods := resource(segs)
	if len(methods) == 0 {
		return routed{target: target{endpoint: EndpointOther}}
	}
	if t, ok := methods[method]; ok {
		return routed{target: t, segs: segs}
	}
	return routed{target: target{EndpointOther, methodNotAllowed(methods)}, segs: segs}
}

// resource is what each method does on the resource at segs.
func resource(segs []string) map[string]target {
	n := len(segs)
	switch {
	case n == 2 && segs[0] == "sobjects":
		return map[string]target{http.MethodPost: {EndpointCreate, (*Server).serveCreate}}
	case n == 3 && segs[0] == "sobjects":
		m := map[string]target{
			http.MethodGet:   {EndpointRead, (*Server).serveRead},
			http.MethodPatch: {EndpointUpdate, (*Server).serveUpdate},
		}
		if segs[2] == "Id" {
			// In API 37.0 and later a POST to sobjects/{Object}/Id creates
			// a record (resources_sobject_upsert_post.htm).
			m[http.MethodPost] = target{EndpointCreate, (*Server).serveCreate}
		}
		return m
	case n == 4 && segs[0] == "sobjects":
		return map[string]target{
			http.MethodGet:   {EndpointReadByExternalID, (*Server).serveReadByExternalID},
			http.MethodPatch: {EndpointUpsert, (*Server).serveUpsert},
		}
	case n == 1 && segs[0] == "query":
		return map[string]target{http.MethodGet: {EndpointQuery, (*Server).serveQuery}}
	case n == 2 && segs[0] == "query":
		return map[string]target{http.MethodGet: {EndpointQueryMore, (*Server).serveQueryMore}}
	}
	return nil
}

// segments splits an escaped path into unescaped segments, dropping one
// trailing slash (the docs write both query?q= and query/?q=). An empty
// segment inside the path fails.
func segments(escaped string) ([]string, bool) {
	escaped = strings.TrimSuffix(escaped, "/")
	if escaped == "" {
		return nil, false
	}
	parts := strings.Split(escaped, "/")
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil || u == "" {
			return nil, false
		}
		parts[i] = u
	}
	return parts, true
}

// methodNotAllowed answers 405 naming the methods the resource allows.
func methodNotAllowed(methods map[string]target) handler {
	allowed := make([]string, 0, len(methods))
	for m := range methods {
		allowed = append(allowed, m)
	}
	sort.Strings(allowed)
	return func(_ *Server, r *http.Request, _ call) (int, any) {
		return fail(http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED",
			"HTTP Method '"+r.Method+"' not allowed. Allowed are "+strings.Join(allowed, ",")).reply()
	}
}

var versionRE = regexp.MustCompile(`^v(\d{1,3})\.\d$`)

// parseVersion reads "v60.0" into 60.
func parseVersion(v string) (int, bool) {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil && n > 0
}
