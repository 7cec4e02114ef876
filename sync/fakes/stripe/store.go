package stripe

import (
	"encoding/json"
	"sort"
	"time"
)

// record is one stored object with the versions search has yet to catch up
// with. Search is eventually consistent: "Under normal operating
// conditions, data is searchable in under 1 minute" and "Don't use search
// for read-after-write flows" (https://docs.stripe.com/search#data-freshness);
// list and retrieve are not subject to that delay.
type record struct {
	seq      int64 // creation order across all objects: lists go newest first
	obj      map[string]any
	versions []version // oldest first; the last is obj as of its write
}

// version is the object as one write left it.
type version struct {
	at  time.Time
	obj map[string]any
}

// table holds the objects of one resource.
type table struct {
	byID  map[string]*record
	order []*record // by seq, oldest first
}

func newTable() *table { return &table{byID: map[string]*record{}} }

// add stores a new object.
func (t *table) add(seq int64, obj map[string]any, at time.Time) {
	rec := &record{seq: seq, obj: obj}
	rec.versions = []version{{at: at, obj: deepCopy(obj).(map[string]any)}}
	t.byID[obj["id"].(string)] = rec
	t.order = append(t.order, rec)
}

// touched records a write to rec's object at at.
func (rec *record) touched(at time.Time) {
	rec.versions = append(rec.versions, version{at: at, obj: deepCopy(rec.obj).(map[string]any)})
}

// indexed is the object as search sees it at now, or nil while its first
// version has not reached the index. Versions older than the one seen are
// dropped: search never goes back to them.
func (rec *record) indexed(now time.Time, lag time.Duration) map[string]any {
	for i := len(rec.versions) - 1; i >= 0; i-- {
		if !now.Before(rec.versions[i].at.Add(lag)) {
			rec.versions = rec.versions[i:]
			return rec.versions[0].obj
		}
	}
	return nil
}

// position is where the object with id sits in t.order, or -1.
func (t *table) position(id string) int {
	rec, ok := t.byID[id]
	if !ok {
		return -1
	}
	return sort.Search(len(t.order), func(i int) bool { return t.order[i].seq >= rec.seq })
}

// page is one page of a list or a search, newest first.
type page struct {
	items   []map[string]any
	hasMore bool
	lastSeq int64 // of the last item, for a search's next_page
}

// walk collects up to limit objects for which keep returns non-nil, going
// from order[from] towards older objects (step -1) or newer ones (step 1),
// and says whether more would follow.
func (t *table) walk(from, step, limit int, keep func(*record) map[string]any) page {
	var p page
	for i := from; i >= 0 && i < len(t.order); i += step {
		obj := keep(t.order[i])
		if obj == nil {
			continue
		}
		if len(p.items) == limit {
			p.hasMore = true
			break
		}
		p.items = append(p.items, obj)
		p.lastSeq = t.order[i].seq
	}
	if step > 0 { // collected oldest first: answer newest first
		for i, j := 0, len(p.items)-1; i < j; i, j = i+1, j-1 {
			p.items[i], p.items[j] = p.items[j], p.items[i]
		}
	}
	return p
}

// list is Stripe's cursor pagination: "starting_after is an object ID that
// defines your place in the list ... ending_before ... fetch the previous
// page of the list", objects "in reverse chronological order"
// (https://docs.stripe.com/api/pagination). pos is the cursor's position
// in t.order (-1: none, start from the newest); backward reads the page
// before it (ending_before) instead of the one after it.
func (t *table) list(pos int, backward bool, limit int, keep func(map[string]any) bool) page {
	match := func(rec *record) map[string]any {
		if keep(rec.obj) {
			return rec.obj
		}
		return nil
	}
	switch {
	case pos < 0:
		return t.walk(len(t.order)-1, -1, limit, match)
	case backward:
		return t.walk(pos+1, 1, limit, match)
	}
	return t.walk(pos-1, -1, limit, match)
}

// deepCopy copies a decoded JSON-like value.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = deepCopy(c)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = deepCopy(c)
		}
		return out
	}
	return v
}

// mustJSON encodes a value built from maps, lists and scalars, indented as
// Stripe's answers are.
func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic("stripe fake: encode answer: " + err.Error()) // only plain values are ever encoded
	}
	return append(b, '\n')
}
