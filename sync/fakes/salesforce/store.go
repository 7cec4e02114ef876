package salesforce

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Record is one record's fields, Id included, as the fake keeps them.
// Values are what JSON gave: strings, json.Number, booleans, nil.
type Record map[string]any

// systemFields are set by the fake, never by a request.
var systemFields = []string{"Id", "CreatedDate", "LastModifiedDate", "SystemModstamp"}

// table holds one object's records. The Server's mutex guards it.
type table struct {
	name    string
	prefix  string
	fields  map[string]string // lower-case name → canonical name, system fields included
	extIDs  map[string]bool   // canonical names
	unique  map[string]bool   // canonical names
	cased   map[string]bool   // unique fields that are case-sensitive
	records []Record          // in creation order
	byID    map[string]Record
	creates int
}

// newTable checks o and builds its table; customSeen counts the custom
// objects before it, for their key prefixes.
func newTable(o Object, customSeen int) (*table, error) {
	prefix, err := keyPrefix(o, customSeen)
	if err != nil {
		return nil, err
	}
	t := &table{name: o.Name, prefix: prefix, fields: map[string]string{},
		extIDs: map[string]bool{}, unique: map[string]bool{}, cased: map[string]bool{}, byID: map[string]Record{}}
	for _, f := range append(slices.Clone(systemFields), o.Fields...) {
		t.fields[strings.ToLower(f)] = f
	}
	for _, f := range o.ExternalIDs {
		c, ok := t.field(f)
		if !ok || isSystem(c) {
			return nil, fmt.Errorf("object %s: external ID %s is not one of its fields", o.Name, f)
		}
		t.extIDs[c] = true
	}
	for _, f := range o.Unique {
		c, _ := t.field(f)
		if !t.extIDs[c] {
			return nil, fmt.Errorf("object %s: unique field %s is not one of its external IDs", o.Name, f)
		}
		t.unique[c] = true
	}
	for _, f := range o.CaseSensitive {
		c, _ := t.field(f)
		if !t.unique[c] {
			return nil, fmt.Errorf("object %s: case-sensitive field %s is not one of its unique fields", o.Name, f)
		}
		t.cased[c] = true
	}
	return t, nil
}

// field is the canonical name of a field: API names are case-insensitive.
func (t *table) field(name string) (string, bool) {
	c, ok := t.fields[strings.ToLower(name)]
	return c, ok
}

func isSystem(field string) bool { return slices.Contains(systemFields, field) }

// byExternalID returns the records an upsert or a read by external ID
// finds for value: the match ignores case only on a unique field that is
// not case-sensitive.
func (t *table) byExternalID(field, value string) []Record {
	fold := t.unique[field] && !t.cased[field]
	var out []Record
	for _, r := range t.records {
		if same(r[field], value, fold) {
			out = append(out, r)
		}
	}
	return out
}

// same reports whether a stored value is value; nil is no value.
func same(v any, value string, fold bool) bool {
	if v == nil {
		return false
	}
	if fold {
		return strings.EqualFold(toString(v), value)
	}
	return toString(v) == value
}

// duplicate is the first unique field whose value in fields another record
// than id already holds, with that record's id.
func (t *table) duplicate(id string, fields Record) (field, other string, found bool) {
	for f := range t.unique {
		v, ok := fields[f]
		if !ok || v == nil {
			continue
		}
		for _, r := range t.byExternalID(f, toString(v)) {
			if r["Id"] != id {
				return f, r["Id"].(string), true
			}
		}
	}
	return "", "", false
}

// insert adds a record of fields at now and returns its id.
func (t *table) insert(fields Record, now time.Time) string {
	id := recordID(t.prefix, uint64(len(t.records)+1))
	r := Record{}
	for _, c := range t.fields {
		if !isSystem(c) {
			r[c] = nil
		}
	}
	for f, v := range fields {
		r[f] = v
	}
	stamp := now.UTC().Format(dateTimeLayout)
	r["Id"], r["CreatedDate"], r["LastModifiedDate"], r["SystemModstamp"] = id, stamp, stamp, stamp
	t.records = append(t.records, r)
	t.byID[id] = r
	t.creates++
	return id
}

// update sets fields on r at now.
func (t *table) update(r Record, fields Record, now time.Time) {
	for f, v := range fields {
		r[f] = v
	}
	stamp := now.UTC().Format(dateTimeLayout)
	r["LastModifiedDate"], r["SystemModstamp"] = stamp, stamp
}

// dateTimeLayout is how the REST API writes dateTime fields
// ("2012-07-12T17:49:01.000+0000", using_resources_retrieve_with_externalid.htm).
const dateTimeLayout = "2006-01-02T15:04:05.000-0700"

// toString is a field value as text.
func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
