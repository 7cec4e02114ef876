package hubspot

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The object endpoints, as in
// https://developers.hubspot.com/docs/api/crm/contacts: POST
// /crm/v3/objects/{type} with {"properties":{...}} answers 201 with the
// object; GET and PATCH /crm/v3/objects/{type}/{id} read and update one,
// by HubSpot's id or, with ?idProperty=NAME, by a unique property's value
// (https://developers.hubspot.com/docs/api-reference/latest/crm/objects/custom-objects/get-custom-object.md);
// GET /crm/v3/objects/{type} lists them a page at a time, the next page
// named at paging.next.after.

// readOnly are the properties HubSpot sets itself and returns on every
// object.
var readOnly = map[string]bool{"hs_object_id": true, "createdate": true, "lastmodifieddate": true, "hs_lastmodifieddate": true}

const (
	listDefaultLimit = 10
	listMaxLimit     = 100
)

type objectJSON struct {
	ID         string         `json:"id"`
	Properties map[string]any `json:"properties"`
	CreatedAt  string         `json:"createdAt"`
	UpdatedAt  string         `json:"updatedAt"`
	Archived   bool           `json:"archived"`
}

type pageJSON struct {
	Total   *int         `json:"total,omitempty"` // search answers only
	Results []objectJSON `json:"results"`
	Paging  *pagingJSON  `json:"paging,omitempty"`
}

type pagingJSON struct {
	Next nextJSON `json:"next"`
}

type nextJSON struct {
	After string `json:"after"`
	Link  string `json:"link,omitempty"`
}

type writeBody struct {
	Properties map[string]any `json:"properties"`
}

func (f *Fake) create(w http.ResponseWriter, r *http.Request, t *table) {
	var in writeBody
	if !decode(w, r, &in) {
		return
	}
	props, ok := t.values(w, in.Properties)
	if !ok {
		return
	}
	o, c := f.insert(t, props)
	if c != nil {
		conflict(w, t, *c)
		return
	}
	writeJSON(w, http.StatusCreated, render(o, nil))
}

func (f *Fake) read(w http.ResponseWriter, r *http.Request, t *table) {
	prop, ok := t.idProperty(w, r)
	if !ok {
		return
	}
	o, found := f.get(t, prop, r.PathValue("id"))
	if !found {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, render(o, wanted(r.URL.Query()["properties"])))
}

func (f *Fake) update(w http.ResponseWriter, r *http.Request, t *table) {
	prop, ok := t.idProperty(w, r)
	if !ok {
		return
	}
	var in writeBody
	if !decode(w, r, &in) {
		return
	}
	changes, ok := t.values(w, in.Properties)
	if !ok {
		return
	}
	o, c, found := f.patch(t, prop, r.PathValue("id"), changes)
	switch {
	case !found:
		notFound(w)
	case c != nil:
		conflict(w, t, *c)
	default:
		writeJSON(w, http.StatusOK, render(o, nil))
	}
}

func (f *Fake) list(w http.ResponseWriter, r *http.Request, t *table) {
	q := r.URL.Query()
	limit, ok := limitParam(w, q.Get("limit"), listMaxLimit)
	if !ok {
		return
	}
	var after int64
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			invalid(w, fmt.Sprintf("after %q is not a paging cursor this API gave", a))
			return
		}
		after = n
	}
	objs, more := f.page(t, after, limit)
	want := wanted(q["properties"])
	out := pageJSON{Results: make([]objectJSON, len(objs))}
	for i, o := range objs {
		out.Results[i] = render(o, want)
	}
	if more {
		last := objs[len(objs)-1].ID
		out.Paging = &pagingJSON{Next: nextJSON{After: last, Link: nextLink(r, last)}}
	}
	writeJSON(w, http.StatusOK, out)
}

// decode reads a JSON request body into v, answering 400 when it is not
// JSON.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		invalid(w, "Invalid input JSON: "+err.Error())
		return false
	}
	return true
}

type badProperty struct{ name, code, message string }

// values turns a request's properties into the strings HubSpot stores,
// answering 400 for a name the type does not declare, a read-only one, or
// a value that is neither text, number nor boolean.
func (t *table) values(w http.ResponseWriter, in map[string]any) (map[string]string, bool) {
	out := make(map[string]string, len(in))
	var bad []badProperty
	for name, v := range in {
		s, ok := text(v)
		switch {
		case readOnly[name]:
			bad = append(bad, badProperty{name, "READ_ONLY_VALUE", fmt.Sprintf("%q is a read only property; its value cannot be set.", name)})
		case t.props[name].Name == "":
			bad = append(bad, badProperty{name, "PROPERTY_DOESNT_EXIST", fmt.Sprintf("Property %q does not exist", name)})
		case !ok:
			bad = append(bad, badProperty{name, "INVALID_OPTION", fmt.Sprintf("Property %q takes text, a number or a boolean", name)})
		default:
			out[name] = s
		}
	}
	if len(bad) > 0 {
		propertyErrors(w, bad)
		return nil, false
	}
	return out, true
}

// text is a property value as HubSpot keeps it: a string (null clears).
func text(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", true
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// idProperty returns the unique property named by ?idProperty= ("" for
// HubSpot's own id), answering 400 when the property is not unique: only
// unique properties identify an object.
func (t *table) idProperty(w http.ResponseWriter, r *http.Request) (string, bool) {
	prop := r.URL.Query().Get("idProperty")
	if prop == "" || prop == "hs_object_id" {
		return "", true
	}
	if !t.props[prop].Unique {
		invalid(w, fmt.Sprintf("Property %q is not a unique identifier property of %s", prop, t.name))
		return "", false
	}
	return prop, true
}

// limitParam reads ?limit= (default 10, at most max).
func limitParam(w http.ResponseWriter, raw string, max int) (int, bool) {
	if raw == "" {
		return listDefaultLimit, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > max {
		invalid(w, fmt.Sprintf("limit must be a number from 1 to %d, not %q", max, raw))
		return 0, false
	}
	return n, true
}

// wanted reads properties=a,b (given once with commas or repeated); nil
// asks for every property.
func wanted(raw []string) []string {
	var out []string
	for _, r := range raw {
		for _, p := range strings.Split(r, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// render is an object as HubSpot answers it: the properties asked for
// (null when unset), or all it holds, and always hs_object_id, createdate
// and lastmodifieddate.
func render(o Object, want []string) objectJSON {
	props := map[string]any{}
	if want == nil {
		for k, v := range o.Properties {
			props[k] = v
		}
	}
	for _, name := range want {
		if v, ok := o.Properties[name]; ok {
			props[name] = v
		} else {
			props[name] = nil
		}
	}
	created, updated := stamp(o.CreatedAt), stamp(o.UpdatedAt)
	props["hs_object_id"], props["createdate"], props["lastmodifieddate"] = o.ID, created, updated
	return objectJSON{ID: o.ID, Properties: props, CreatedAt: created, UpdatedAt: updated}
}

// stamp is HubSpot's timestamp form, e.g. 2019-10-30T03:30:17.883Z.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// nextLink is the URL of the next page: this request's, after the cursor.
func nextLink(r *http.Request, after string) string {
	q := r.URL.Query()
	q.Set("after", after)
	u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}
	if r.TLS != nil {
		u.Scheme = "https"
	}
	return u.String()
}
