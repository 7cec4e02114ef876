package stripe

import (
	"net/http"
	"slices"
)

// create makes a new object (POST /v1/{path}).
func (s *Server) create(r *http.Request, res *resource, p params) (any, *apiError) {
	v, err := check(p, res.create, "")
	if err != nil {
		return nil, err
	}
	for _, name := range res.required {
		if _, ok := v[name]; !ok {
			return nil, missingParam(name)
		}
	}
	if err := s.validate(res, v); err != nil {
		return nil, err
	}
	s.executing(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkRefs(res, v); err != nil {
		return nil, err
	}
	s.seq++
	now := s.now()
	obj := res.blank(res.prefix+"_"+randomID(14), now.Unix())
	merge(obj, v)
	s.tables[res].add(s.seq, obj, now)
	s.creates[res.object]++
	return deepCopy(obj), nil
}

// update changes an object (POST /v1/{path}/{id}): "Any parameters not
// provided are left unchanged" (https://docs.stripe.com/api/customers/update).
func (s *Server) update(r *http.Request, res *resource, p params) (any, *apiError) {
	v, err := check(p, res.update, "")
	if err != nil {
		return nil, err
	}
	if err := s.validate(res, v); err != nil {
		return nil, err
	}
	s.executing(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.tables[res].byID[r.PathValue("id")]
	if !ok {
		return nil, noSuchObject(res.object, r.PathValue("id"))
	}
	if err := s.checkRefs(res, v); err != nil {
		return nil, err
	}
	merge(rec.obj, v)
	rec.touched(s.now())
	return deepCopy(rec.obj), nil
}

// validate drops expand (objects are never expanded here) and applies the
// resource's own rules.
func (s *Server) validate(res *resource, v map[string]any) *apiError {
	delete(v, "expand")
	if res == paymentIntents {
		return checkPaymentIntent(v)
	}
	return nil
}

// checkRefs refuses a parameter naming an object that does not exist (a
// payment intent's customer). The caller holds s.mu.
func (s *Server) checkRefs(res *resource, v map[string]any) *apiError {
	for name, target := range res.refs {
		if id, ok := v[name].(string); ok {
			if _, exists := s.tables[target].byID[id]; !exists {
				return noSuchCursor(name, target.object, id)
			}
		}
	}
	return nil
}

func (s *Server) executing(r *http.Request) {
	if s.opts.Executing != nil {
		s.opts.Executing(r)
	}
}

// retrieve answers GET /v1/{path}/{id}, never lagging.
func (s *Server) retrieve(r *http.Request, res *resource, p params) (any, *apiError) {
	if _, err := check(p, fields{"expand": expand}, ""); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.tables[res].byID[r.PathValue("id")]
	if !ok {
		return nil, noSuchObject(res.object, r.PathValue("id"))
	}
	return deepCopy(rec.obj), nil
}

// remove answers DELETE /v1/customers/{id}: the customer is gone for
// good, the answer {"id", "object", "deleted": true}, and a customer there
// is none of (deleted already too) is a 404
// (https://docs.stripe.com/api/customers/delete).
func (s *Server) remove(r *http.Request, res *resource, p params) (any, *apiError) {
	if _, err := check(p, fields{}, ""); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, id := s.tables[res], r.PathValue("id")
	rec, ok := t.byID[id]
	if !ok {
		return nil, noSuchObject(res.object, id)
	}
	delete(t.byID, id)
	t.order = slices.DeleteFunc(t.order, func(o *record) bool { return o == rec })
	return map[string]any{"id": id, "object": res.object, "deleted": true}, nil
}

// pageParams are the parameters every list takes
// (https://docs.stripe.com/api/pagination).
var pageParams = fields{"limit": {kind: kInt}, "starting_after": {}, "ending_before": {}, "expand": expand}

// list answers GET /v1/{path}: {"object": "list", "url", "has_more", "data"}.
func (s *Server) list(_ *http.Request, res *resource, p params) (any, *apiError) {
	v, err := check(p, with(pageParams, res.filters), "")
	if err != nil {
		return nil, err
	}
	limit, err := limitOf(v)
	if err != nil {
		return nil, err
	}
	after, _ := v["starting_after"].(string)
	before, _ := v["ending_before"].(string)
	if after != "" && before != "" {
		return nil, invalidRequest("Received both starting_after and ending_before parameters. Please pass in only one.")
	}
	cursor, param := after, "starting_after"
	if before != "" {
		cursor, param = before, "ending_before"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[res]
	pos := -1
	if cursor != "" {
		if pos = t.position(cursor); pos < 0 {
			return nil, noSuchCursor(param, res.object, cursor)
		}
	}
	pg := t.list(pos, before != "", limit, filterOf(v, res))
	return map[string]any{"object": "list", "url": "/v1/" + res.path, "has_more": pg.hasMore,
		"data": copies(pg.items)}, nil
}

// limitOf reads limit: "ranging between 1 and 100", default 10.
func limitOf(v map[string]any) (int, *apiError) {
	n, ok := v["limit"].(int64)
	if !ok {
		return 10, nil
	}
	if n < 1 || n > 100 {
		return 0, invalidParam("limit", "parameter_invalid_integer", "Invalid limit: must be between 1 and 100, got %d.", n)
	}
	return int(n), nil
}

// filterOf is a list's filters (email, customer, created) as a predicate.
func filterOf(v map[string]any, res *resource) func(map[string]any) bool {
	return func(obj map[string]any) bool {
		for name := range res.filters {
			want, given := v[name]
			if !given {
				continue
			}
			if bounds, isHash := want.(map[string]any); isHash {
				if !inRange(obj[name], bounds) {
					return false
				}
			} else if obj[name] != want {
				return false
			}
		}
		return true
	}
}

// inRange applies created[gt]=... and its siblings.
func inRange(v any, bounds map[string]any) bool {
	n, _ := toInt(v)
	for op, b := range bounds {
		x, _ := b.(int64)
		if (op == "gt" && !(n > x)) || (op == "gte" && !(n >= x)) || (op == "lt" && !(n < x)) || (op == "lte" && !(n <= x)) {
			return false
		}
	}
	return true
}

// copies deep-copies a page's objects, so an answer is never the store.
func copies(objs []map[string]any) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = deepCopy(o)
	}
	return out
}
