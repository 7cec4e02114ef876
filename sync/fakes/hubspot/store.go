package hubspot

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Stats counts what the fake has seen, for tests.
type Stats struct {
	Creates   int // objects created (201 answers)
	Conflicts int // 409 answers for a taken unique value
	TooMany   int // 429 answers from the fake's own rate limits
	// Requests counts authenticated requests per endpoint, refused ones
	// included, e.g. "POST /crm/v3/objects/contacts" or
	// "PATCH /crm/v3/objects/deals/{id}".
	Requests map[string]int
}

// Object is one stored CRM object as a test sees it.
type Object struct {
	ID         string
	Properties map[string]string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// object is one stored object. Its property maps are never changed once
// stored (an update stores a new map), so snapshots can share them.
type object struct {
	id      string
	num     int64
	props   map[string]string
	created time.Time
	updated time.Time
	// seen is what search has and will see, oldest first: a version
	// becomes visible SearchLag after it was written.
	seen []version
}

type version struct {
	at    time.Time
	props map[string]string
}

// visible returns the newest version search sees at now.
func (o *object) visible(now time.Time, lag time.Duration) (version, bool) {
	for i := len(o.seen) - 1; i >= 0; i-- {
		if !now.Before(o.seen[i].at.Add(lag)) {
			return o.seen[i], true
		}
	}
	return version{}, false
}

// remember records a new version for search, dropping those a visible
// newer one hides.
func (o *object) remember(v version, now time.Time, lag time.Duration) {
	o.seen = append(o.seen, v)
	for len(o.seen) > 1 && !now.Before(o.seen[1].at.Add(lag)) {
		o.seen = o.seen[1:]
	}
}

func (o *object) snapshot() Object {
	props := make(map[string]string, len(o.props))
	for k, v := range o.props {
		props[k] = v
	}
	return Object{ID: o.id, Properties: props, CreatedAt: o.created, UpdatedAt: o.updated}
}

// table is one object type: its declared properties, its objects in id
// order (ids only grow, so creation order is id order), and an index per
// unique property from value to the id holding it.
type table struct {
	name, singular string
	props          map[string]Property
	order          []string // property names in declaration order
	byID           map[string]*object
	objects        []*object
	unique         map[string]map[string]string
}

func newTable(name string, props []Property) *table {
	t := &table{name: name, singular: singular(name), props: map[string]Property{},
		byID: map[string]*object{}, unique: map[string]map[string]string{}}
	t.declare(props)
	return t
}

func (t *table) declare(props []Property) {
	for _, p := range props {
		if _, ok := t.props[p.Name]; !ok {
			t.order = append(t.order, p.Name)
		}
		t.props[p.Name] = p
		if p.Unique && t.unique[p.Name] == nil {
			t.unique[p.Name] = map[string]string{}
		}
	}
}

// singular names one object of a type in HubSpot's messages: "Contact",
// "Company", "Deal".
func singular(typ string) string {
	s := strings.TrimSuffix(typ, "s")
	if strings.HasSuffix(typ, "ies") {
		s = strings.TrimSuffix(typ, "ies") + "y"
	}
	if s == "" {
		return typ
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (t *table) lowerSingular() string { return strings.ToLower(t.singular) }

// uniqueKey is the form a unique value is compared in: HubSpot treats
// email addresses without regard to case.
func uniqueKey(prop, value string) string {
	if prop == "email" {
		return strings.ToLower(value)
	}
	return value
}

// taken reports the first unique value in props held by an object other
// than self.
func (t *table) taken(props map[string]string, self string) (clash, bool) {
	for _, name := range t.order {
		value, set := props[name]
		if !t.props[name].Unique || !set || value == "" {
			continue
		}
		if id, ok := t.unique[name][uniqueKey(name, value)]; ok && id != self {
			return clash{prop: name, value: value, existingID: id}, true
		}
	}
	return clash{}, false
}

// index moves o's unique values from old to o.props.
func (t *table) index(o *object, old map[string]string) {
	for name, idx := range t.unique {
		if v := old[name]; v != "" && idx[uniqueKey(name, v)] == o.id {
			delete(idx, uniqueKey(name, v))
		}
		if v := o.props[name]; v != "" {
			idx[uniqueKey(name, v)] = o.id
		}
	}
}

// find returns the object whose id, or whose unique property prop, is key.
func (t *table) find(prop, key string) *object {
	if prop == "" || prop == "hs_object_id" {
		return t.byID[key]
	}
	return t.byID[t.unique[prop][uniqueKey(prop, key)]]
}

// after returns the index of the first object whose id is greater than id.
func (t *table) after(id int64) int {
	return sort.Search(len(t.objects), func(i int) bool { return t.objects[i].num > id })
}

// insert stores a new object unless one of its unique values is taken;
// checking and storing under one lock is what lets exactly one of many
// simultaneous creates with the same value win.
func (f *Fake) insert(t *table, props map[string]string) (Object, *clash) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := t.taken(props, ""); ok {
		f.stats.Conflicts++
		return Object{}, &c
	}
	f.nextID++
	now := f.opts.Now()
	o := &object{id: strconv.FormatInt(f.nextID, 10), num: f.nextID, props: props, created: now, updated: now}
	o.remember(version{at: now, props: props}, now, f.opts.SearchLag)
	t.byID[o.id] = o
	t.objects = append(t.objects, o)
	t.index(o, nil)
	f.stats.Creates++
	return o.snapshot(), nil
}

// patch updates the object found by (prop, key) with changes. found is
// false when there is no such object.
func (f *Fake) patch(t *table, prop, key string, changes map[string]string) (obj Object, c *clash, found bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := t.find(prop, key)
	if o == nil {
		return Object{}, nil, false
	}
	if cl, ok := t.taken(changes, o.id); ok {
		f.stats.Conflicts++
		return Object{}, &cl, true
	}
	old, props := o.props, make(map[string]string, len(o.props)+len(changes))
	for k, v := range old {
		props[k] = v
	}
	for k, v := range changes {
		props[k] = v
	}
	now := f.opts.Now()
	o.props, o.updated = props, now
	o.remember(version{at: now, props: props}, now, f.opts.SearchLag)
	t.index(o, old)
	return o.snapshot(), nil, true
}

// get returns the object found by (prop, key).
func (f *Fake) get(t *table, prop, key string) (Object, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := t.find(prop, key)
	if o == nil {
		return Object{}, false
	}
	return o.snapshot(), true
}

// page returns up to limit objects after the id after, and whether more
// follow.
func (f *Fake) page(t *table, after int64, limit int) ([]Object, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rest := t.objects[t.after(after):]
	more := len(rest) > limit
	if more {
		rest = rest[:limit]
	}
	out := make([]Object, len(rest))
	for i, o := range rest {
		out[i] = o.snapshot()
	}
	return out, more
}

// Objects returns every object of a type, in id order.
func (f *Fake) Objects(typ string) []Object {
	t := f.tables[typ]
	if t == nil {
		return nil
	}
	out, _ := f.page(t, 0, math.MaxInt)
	return out
}

// CountByProperty returns how many objects of a type hold value in prop
// now (search lag does not apply).
func (f *Fake) CountByProperty(typ, prop, value string) int {
	n := 0
	for _, o := range f.Objects(typ) {
		if v, ok := o.Properties[prop]; ok && v == value {
			n++
		}
	}
	return n
}

// Stats returns the counts so far.
func (f *Fake) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.Requests = make(map[string]int, len(f.stats.Requests))
	for k, v := range f.stats.Requests {
		s.Requests[k] = v
	}
	return s
}
