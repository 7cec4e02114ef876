package hubspot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Search, as in https://developers.hubspot.com/docs-beta/crm/search: POST
// /crm/v3/objects/{type}/search with filterGroups (groups ORed, filters in
// a group ANDed), optional sorts, properties, limit and after answers
// {"total":n,"results":[...],"paging":{"next":{"after":"..."}}}. Search
// is served from an index that lags the objects: HubSpot's own guides tell
// callers to wait after a create before searching for it (e.g. "wait 10
// seconds after using a Create card", on
// https://help.okta.com/wf/en-us/content/Topics/Workflows/connector-reference/hubspotcrm/actions/searchcontacts.htm),
// so here a change reaches search SearchLag after it was written.

const searchMaxLimit = 200

type searchBody struct {
	FilterGroups []struct {
		Filters []filter `json:"filters"`
	} `json:"filterGroups"`
	Sorts      []sortBy `json:"sorts"`
	Properties []string `json:"properties"`
	Limit      int      `json:"limit"`
	After      string   `json:"after"`
}

type filter struct {
	PropertyName string   `json:"propertyName"`
	Operator     string   `json:"operator"`
	Value        scalar   `json:"value"`
	Values       []scalar `json:"values"`
}

// scalar is a filter value given as a JSON string, number or boolean.
type scalar string

// UnmarshalJSON takes a string as it is and a number or boolean as its text.
func (s *scalar) UnmarshalJSON(b []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	t, ok := text(v)
	if !ok {
		return fmt.Errorf("a filter value is text, a number or a boolean, not %s", b)
	}
	*s = scalar(t)
	return nil
}

// sortBy is a sort given as {"propertyName":..,"direction":..} or, as the
// API reference also shows, as a bare property name.
type sortBy struct {
	PropertyName string `json:"propertyName"`
	Direction    string `json:"direction"`
}

// UnmarshalJSON takes either form.
func (s *sortBy) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &s.PropertyName)
	}
	type plain sortBy
	return json.Unmarshal(b, (*plain)(s))
}

func (f *Fake) search(w http.ResponseWriter, r *http.Request, t *table) {
	var in searchBody
	if !decode(w, r, &in) || !t.checkSearch(w, &in) {
		return
	}
	offset := 0
	if in.After != "" {
		n, err := strconv.Atoi(in.After)
		if err != nil || n < 0 {
			invalid(w, fmt.Sprintf("after %q is not a paging cursor this API gave", in.After))
			return
		}
		offset = n
	}
	hits := f.indexed(t, in)
	total := len(hits)
	page := hits[min(offset, total):min(offset+in.Limit, total)]
	out := pageJSON{Total: &total, Results: make([]objectJSON, len(page))}
	for i, o := range page {
		out.Results[i] = render(o, wanted(in.Properties))
	}
	if offset+in.Limit < total {
		out.Paging = &pagingJSON{Next: nextJSON{After: strconv.Itoa(offset + in.Limit)}}
	}
	writeJSON(w, http.StatusOK, out)
}

// operators are the filter operators the fake knows.
var operators = map[string]bool{"EQ": true, "NEQ": true, "IN": true, "NOT_IN": true, "HAS_PROPERTY": true, "NOT_HAS_PROPERTY": true}

// checkSearch answers 400 for a limit out of range, an unknown operator or
// a filter or sort on a property the type does not have; it sets the
// default limit.
func (t *table) checkSearch(w http.ResponseWriter, in *searchBody) bool {
	if in.Limit == 0 {
		in.Limit = listDefaultLimit
	}
	if in.Limit < 1 || in.Limit > searchMaxLimit {
		invalid(w, fmt.Sprintf("limit must be a number from 1 to %d, not %d", searchMaxLimit, in.Limit))
		return false
	}
	names := make([]string, 0, len(in.Sorts))
	for _, s := range in.Sorts {
		names = append(names, s.PropertyName)
	}
	for _, g := range in.FilterGroups {
		for _, fl := range g.Filters {
			if !operators[fl.Operator] {
				invalid(w, fmt.Sprintf("Operator %q is not one of %s", fl.Operator, strings.Join(slices.Sorted(maps.Keys(operators)), ", ")))
				return false
			}
			names = append(names, fl.PropertyName)
		}
	}
	for _, n := range names {
		if t.props[n].Name == "" && !readOnly[n] {
			invalid(w, fmt.Sprintf("There was a problem with the request: property %q does not exist on %s", n, t.name))
			return false
		}
	}
	return true
}

// indexed returns, as search sees them now, the objects matching in, in
// its order.
func (f *Fake) indexed(t *table, in searchBody) []Object {
	f.mu.Lock()
	now := f.opts.Now()
	var hits []Object
	for _, o := range t.objects {
		v, ok := o.visible(now, f.opts.SearchLag)
		if !ok {
			continue
		}
		// The version's map is never changed, so sharing it is safe.
		seen := Object{ID: o.id, Properties: v.props, CreatedAt: o.created, UpdatedAt: v.at}
		if matches(seen, in) {
			hits = append(hits, seen)
		}
	}
	f.mu.Unlock()
	sortHits(hits, in.Sorts)
	return hits
}

// matches reports whether o meets any filter group (all when none).
func matches(o Object, in searchBody) bool {
	if len(in.FilterGroups) == 0 {
		return true
	}
	for _, g := range in.FilterGroups {
		if !slices.ContainsFunc(g.Filters, func(fl filter) bool { return !fl.meets(o) }) {
			return true
		}
	}
	return false
}

func (fl filter) meets(o Object) bool {
	v := value(o, fl.PropertyName)
	set := v != ""
	in := slices.ContainsFunc(fl.Values, func(s scalar) bool { return same(fl.PropertyName, string(s), v) })
	switch fl.Operator {
	case "EQ":
		return set && same(fl.PropertyName, string(fl.Value), v)
	case "NEQ":
		return !set || !same(fl.PropertyName, string(fl.Value), v)
	case "IN":
		return set && in
	case "NOT_IN":
		return !set || !in
	case "HAS_PROPERTY":
		return set
	}
	return !set // NOT_HAS_PROPERTY
}

func same(prop, a, b string) bool { return uniqueKey(prop, a) == uniqueKey(prop, b) }

// sortHits orders hits by the sorts given, then by id, comparing as
// numbers where both values are numbers.
func sortHits(hits []Object, sorts []sortBy) {
	slices.SortStableFunc(hits, func(a, b Object) int {
		for _, s := range sorts {
			c := compare(value(a, s.PropertyName), value(b, s.PropertyName))
			if strings.EqualFold(s.Direction, "DESCENDING") {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return compare(a.ID, b.ID)
	})
}

// value is o's value for prop, HubSpot's own properties included.
func value(o Object, prop string) string {
	switch prop {
	case "hs_object_id":
		return o.ID
	case "createdate":
		return stamp(o.CreatedAt)
	case "lastmodifieddate", "hs_lastmodifieddate":
		return stamp(o.UpdatedAt)
	}
	return o.Properties[prop]
}

func compare(a, b string) int {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}
