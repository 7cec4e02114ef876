package stripe

import (
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// searchParams are what a search takes (https://docs.stripe.com/api/pagination/search).
var searchParams = fields{"query": {}, "limit": {kind: kInt}, "page": {}, "expand": expand}

// searchRequest is a checked search.
type searchRequest struct {
	q          query
	limit      int
	page       string // next_page of an earlier answer; "" for the first
	totalCount bool   // expand[]=total_count
}

// parseSearch checks a search's parameters and query.
func parseSearch(p params, res *resource) (searchRequest, *apiError) {
	v, err := check(p, searchParams, "")
	if err != nil {
		return searchRequest{}, err
	}
	qs, ok := v["query"].(string)
	if !ok {
		return searchRequest{}, missingParam("query")
	}
	q, qerr := parseQuery(qs, res.search, res.object)
	if qerr != nil {
		return searchRequest{}, invalidParam("query", "", "Invalid search query: %v.", qerr)
	}
	limit, err := limitOf(v)
	if err != nil {
		return searchRequest{}, err
	}
	page, _ := v["page"].(string)
	expanded, _ := v["expand"].([]string)
	return searchRequest{q: q, limit: limit, page: page, totalCount: slices.Contains(expanded, "total_count")}, nil
}

// search answers GET /v1/{path}/search over the objects as the index has
// them, which trails writes by SearchLag: {"object": "search_result",
// "url", "has_more", "next_page", "data"}, newest first; expand[]=total_count
// adds total_count.
func (s *Server) search(_ *http.Request, res *resource, p params) (any, *apiError) {
	sr, err := parseSearch(p, res)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[res]
	from := len(t.order) - 1
	if sr.page != "" {
		seq, ok := pageSeq(sr.page)
		if !ok {
			return nil, invalidParam("page", "", "Invalid page: %q is not a next_page value this search returned.", sr.page)
		}
		from = t.before(seq)
	}
	now := s.now()
	hit := func(rec *record) map[string]any {
		if obj := rec.indexed(now, s.opts.SearchLag); obj != nil && sr.q.matches(obj) {
			return obj
		}
		return nil
	}
	pg := t.walk(from, -1, sr.limit, hit)
	out := map[string]any{"object": "search_result", "url": "/v1/" + res.path + "/search",
		"has_more": pg.hasMore, "next_page": nil, "data": copies(pg.items)}
	if pg.hasMore {
		out["next_page"] = "page_" + strconv.FormatInt(pg.lastSeq, 36)
	}
	if sr.totalCount {
		out["total_count"] = len(t.walk(len(t.order)-1, -1, len(t.order), hit).items)
	}
	return out, nil
}

// pageSeq reads a next_page token: the seq of the last object returned.
func pageSeq(token string) (int64, bool) {
	rest, ok := strings.CutPrefix(token, "page_")
	n, err := strconv.ParseInt(rest, 36, 64)
	return n, ok && err == nil
}

// before is the position of the newest object older than seq, or -1.
func (t *table) before(seq int64) int {
	return sort.Search(len(t.order), func(i int) bool { return t.order[i].seq >= seq }) - 1
}
