package salesforce

import (
	"fmt"
	"maps"
)

// What tests may ask the fake, and do to it behind the API's back.

// Insert adds a record with fields as they are, skipping every check the
// API makes (unknown fields, unique values): the way to give two records
// the same external ID, as data loaded before the field was made unique
// would. It returns the new record's id.
func (s *Server) Insert(object string, fields map[string]any) (string, error) {
	t, f := s.table(object)
	if f != nil {
		return "", fmt.Errorf("salesforce fake: no object %s", object)
	}
	rec := Record{}
	for k, v := range fields {
		if c, ok := t.field(k); ok {
			k = c
		}
		rec[k] = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.insert(rec, s.now()), nil
}

// Records returns copies of an object's records in creation order.
func (s *Server) Records(object string) []Record {
	t, f := s.table(object)
	if f != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, len(t.records))
	for i, r := range t.records {
		out[i] = maps.Clone(r)
	}
	return out
}

// CountByField counts an object's records whose field holds exactly value.
func (s *Server) CountByField(object, field, value string) int {
	t, f := s.table(object)
	if f != nil {
		return 0
	}
	if c, ok := t.field(field); ok {
		field = c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range t.records {
		if same(r[field], value, false) {
			n++
		}
	}
	return n
}

// Creates counts the records of an object created so far, by any means.
func (s *Server) Creates(object string) int {
	t, f := s.table(object)
	if f != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.creates
}
