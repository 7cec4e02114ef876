package salesforce

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// Records by id: create (POST sobjects/{Object}, 201 {id, success, errors}),
// read (GET sobjects/{Object}/{id}, the record with its attributes) and
// update (PATCH sobjects/{Object}/{id}, 204 and no body).
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_sobject_create.htm
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_get_field_values.htm
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_update_fields.htm

// saveResult is the answer to a create or an upsert. Created is sent by
// upserts from API 46.0 on (dome_upsert.htm), never by a plain create.
type saveResult struct {
	ID      string     `json:"id"`
	Success bool       `json:"success"`
	Errors  []apiError `json:"errors"`
	Created *bool      `json:"created,omitempty"`
}

func (s *Server) serveCreate(r *http.Request, c call) (int, any) {
	t, f := s.table(c.segs[1])
	if f != nil {
		return f.reply()
	}
	fields, f := readBody(r, t)
	if f != nil {
		return f.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, f := s.create(t, fields)
	if f != nil {
		return f.reply()
	}
	return http.StatusCreated, saveResult{ID: id, Success: true, Errors: []apiError{}}
}

func (s *Server) serveRead(r *http.Request, c call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, rec, f := s.record(c.segs[1], c.segs[2])
	if f != nil {
		return f.reply()
	}
	out, f := t.render(rec, c.base(), r.URL.Query().Get("fields"))
	if f != nil {
		return f.reply()
	}
	return http.StatusOK, out
}

func (s *Server) serveUpdate(r *http.Request, c call) (int, any) {
	t, f := s.table(c.segs[1])
	if f != nil {
		return f.reply()
	}
	fields, f := readBody(r, t)
	if f != nil {
		return f.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, rec, f := s.record(t.name, c.segs[2])
	if f != nil {
		return f.reply()
	}
	if f := s.change(t, rec, fields); f != nil {
		return f.reply()
	}
	return http.StatusNoContent, nil
}

// table finds an object by its case-insensitive name. The objects and
// their fields never change after New, so no lock is needed; their records
// are guarded by s.mu.
func (s *Server) table(name string) (*table, *failure) {
	t, ok := s.objects[strings.ToLower(name)]
	if !ok {
		return nil, notFound()
	}
	return t, nil
}

// record finds one record of an object by id (15 or 18 characters). The
// caller holds s.mu.
func (s *Server) record(object, id string) (*table, Record, *failure) {
	t, f := s.table(object)
	if f != nil {
		return nil, nil, f
	}
	if len(id) == 15 {
		id += caseSuffix(id)
	}
	rec, ok := t.byID[id]
	if !ok {
		return nil, nil, notFound()
	}
	return t, rec, nil
}

// create inserts fields unless a unique external ID refuses them.
func (s *Server) create(t *table, fields Record) (string, *failure) {
	if f := refuseDuplicate(t, "", fields); f != nil {
		return "", f
	}
	return t.insert(fields, s.now()), nil
}

// change updates rec with fields unless a unique external ID refuses them.
func (s *Server) change(t *table, rec Record, fields Record) *failure {
	if f := refuseDuplicate(t, rec["Id"].(string), fields); f != nil {
		return f
	}
	t.update(rec, fields, s.now())
	return nil
}

// refuseDuplicate answers DUPLICATE_VALUE when fields would give a unique
// field a value another record than id holds.
func refuseDuplicate(t *table, id string, fields Record) *failure {
	field, other, dup := t.duplicate(id, fields)
	if !dup {
		return nil
	}
	return fail(http.StatusBadRequest, "DUPLICATE_VALUE",
		"duplicate value found: "+field+" duplicates value on record with id: "+other)
}

// readBody decodes a record's fields from the request's JSON body, by their
// canonical names. Unknown fields and Id are INVALID_FIELD; the other
// system fields cannot be written (INVALID_FIELD_FOR_INSERT_UPDATE);
// "attributes" is ignored, as clients may send it back.
func readBody(r *http.Request, t *table) (Record, *failure) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fail(http.StatusRequestEntityTooLarge, "JSON_PARSER_ERROR", "request body could not be read")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil || body == nil {
		return nil, fail(http.StatusBadRequest, "JSON_PARSER_ERROR", "the body is not a JSON object: "+errText(err))
	}
	fields := Record{}
	for k, v := range body {
		if k == "attributes" {
			continue
		}
		c, ok := t.field(k)
		switch {
		case !ok:
			return nil, noSuchColumn(t.name, k)
		case c == "Id":
			// The docs' own example of a refused create (dome_sobject_create.htm).
			return nil, fail(http.StatusBadRequest, "INVALID_FIELD", "The Id field should not be specified in the sobject data.")
		case isSystem(c):
			return nil, fail(http.StatusBadRequest, "INVALID_FIELD_FOR_INSERT_UPDATE",
				"Unable to create/update fields: "+c+". Please check the security settings of this field and verify that it is read/write for your profile or permission set.", c)
		}
		switch v.(type) {
		case map[string]any, []any:
			return nil, fail(http.StatusBadRequest, "JSON_PARSER_ERROR", "Cannot deserialize instance of "+c+" from a JSON object or array", c)
		}
		fields[c] = v
	}
	return fields, nil
}

func errText(err error) string {
	if err == nil {
		return "null"
	}
	if errors.Is(err, io.EOF) {
		return "empty"
	}
	return err.Error()
}

// render is a record as the REST API shows it: attributes (type and url),
// then its fields, or only those named in fields ("Name,Key__c").
func (t *table) render(rec Record, base, fields string) (map[string]any, *failure) {
	out := map[string]any{"attributes": map[string]string{"type": t.name, "url": t.url(base, rec)}}
	if fields == "" {
		for k, v := range rec {
			out[k] = v
		}
		return out, nil
	}
	for _, f := range strings.Split(fields, ",") {
		c, ok := t.field(strings.TrimSpace(f))
		if !ok {
			return nil, noSuchColumn(t.name, strings.TrimSpace(f))
		}
		out[c] = rec[c]
	}
	return out, nil
}

// url is a record's REST path.
func (t *table) url(base string, rec Record) string {
	return base + "/sobjects/" + t.name + "/" + rec["Id"].(string)
}
