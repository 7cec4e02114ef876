package salesforce

import (
	"net/http"
)

// sObject Rows by External ID. A PATCH upserts:
//   - no record carries the value: one is created with the value set, 201
//     {"id", "success": true, "errors": [], "created": true} ("created" from
//     API 46.0 on);
//   - one does: it is updated, 200 with "created": false from API 46.0 on,
//     204 and no body up to 45.0;
//   - several do: 300 and the list of the matching records, nothing changes.
//
// updateOnly=true refuses to create (404). The body must not name Id nor
// the external ID field: "Do not specify Id or an external ID field in the
// request body or an error is generated". A field that is not an external
// ID answers 404 NOT_FOUND, as the docs' "Incorrect external ID field" does.
// A GET reads the record the value names, with the same 404 and 300.
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_upsert.htm
// https://developer.salesforce.com/docs/atlas.en-us.238.0.api_rest.meta/api_rest/resources_sobject_upsert_patch.htm
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/using_resources_retrieve_with_externalid.htm
//
// The 300 body is a JSON array of the records' URLs ("the list of matching
// records", errorcodes.htm); clients such as the Force.com Toolkit for .NET
// read it as a list of strings.

// createdSince is the first API version whose upsert answers say "created"
// and answer an update with 200 and a body instead of 204.
const createdSince = 46

func (s *Server) serveUpsert(r *http.Request, c call) (int, any) {
	t, field, f := s.externalID(c.segs[1], c.segs[2])
	if f != nil {
		return f.reply()
	}
	fields, f := readBody(r, t)
	if f != nil {
		return f.reply()
	}
	if _, named := fields[field]; named {
		// Worded as the docs' refusal of an Id in a create's body.
		return fail(http.StatusBadRequest, "INVALID_FIELD",
			"The "+field+" field should not be specified in the sobject data: it is the external ID this upsert gives in its URL.", field).reply()
	}
	value := c.segs[3]
	s.mu.Lock()
	defer s.mu.Unlock()
	matches := t.byExternalID(field, value)
	switch {
	case len(matches) > 1:
		return http.StatusMultipleChoices, t.urls(c.base(), matches)
	case len(matches) == 1:
		if f := s.change(t, matches[0], fields); f != nil {
			return f.reply()
		}
		if c.major < createdSince {
			return http.StatusNoContent, nil
		}
		return http.StatusOK, upserted(matches[0]["Id"].(string), false)
	case r.URL.Query().Get("updateOnly") == "true":
		return notFound().reply()
	}
	fields[field] = value
	id, f := s.create(t, fields)
	if f != nil {
		return f.reply()
	}
	res := upserted(id, true)
	if c.major < createdSince {
		res.Created = nil
	}
	return http.StatusCreated, res
}

func (s *Server) serveReadByExternalID(r *http.Request, c call) (int, any) {
	t, field, f := s.externalID(c.segs[1], c.segs[2])
	if f != nil {
		return f.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	matches := t.byExternalID(field, c.segs[3])
	switch len(matches) {
	case 0:
		return notFound().reply()
	case 1:
		out, f := t.render(matches[0], c.base(), r.URL.Query().Get("fields"))
		if f != nil {
			return f.reply()
		}
		return http.StatusOK, out
	}
	return http.StatusMultipleChoices, t.urls(c.base(), matches)
}

// externalID finds an object and one of its external ID fields.
func (s *Server) externalID(object, field string) (*table, string, *failure) {
	t, f := s.table(object)
	if f != nil {
		return nil, "", f
	}
	c, ok := t.field(field)
	if !ok || !t.extIDs[c] {
		return nil, "", notFound()
	}
	return t, c, nil
}

func upserted(id string, created bool) saveResult {
	return saveResult{ID: id, Success: true, Errors: []apiError{}, Created: &created}
}

// urls lists records' REST paths, the body of a 300.
func (t *table) urls(base string, recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = t.url(base, r)
	}
	return out
}
