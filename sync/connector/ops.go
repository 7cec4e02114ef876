package connector

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/mapping"
)

// CanLookup reports whether the service can find an object by our key.
func (c *HTTP) CanLookup(localType string) bool { return c.objects[localType].Lookup != "" }

// CanList reports whether the service can list its objects.
func (c *HTTP) CanList(localType string) bool { return c.objects[localType].List != "" }

// CanUpsert reports whether the service creates or updates the object by our
// key in one call, which needs no lookup.
func (c *HTTP) CanUpsert(localType string) bool { return c.objects[localType].Upsert != "" }

// Create asks the provider to create an object from the record, carrying the
// idempotency key when the service honours one. A refusal that names an
// object already carrying our key (the object's conflict setting) adopts it;
// see adoptConflict.
func (c *HTTP) Create(ctx context.Context, rec Record, idemKey string) Call {
	obj := c.objects[rec.LocalType]
	hdr := http.Header{}
	if c.svc.IdempotencyHeader != "" && idemKey != "" {
		hdr.Set(c.svc.IdempotencyHeader, idemKey)
	}
	call, a := c.write(ctx, obj, "create", obj.Create, rec, hdr)
	call.IdempotencyKey = idemKey
	if id := obj.conflictID(call.HTTPCode, a.decoded, a.raw); call.Class != OK && id != "" {
		return c.adoptConflict(ctx, obj, rec, call, id)
	}
	if call.Class == OK {
		call.ExternalID = obj.IDOf(a.decoded)
		if call.ExternalID == "" {
			// A 2xx says the provider took the create (202, 204) or made the
			// object and put its id where we do not read it: the object may
			// exist. Ambiguous, so that the next attempt looks it up by key,
			// or re-sends with the same Idempotency-Key, before any new create.
			call.Class, call.Ambiguous = Temporary, true
			call.Error = fmt.Sprintf("the provider answered HTTP %d without the new object's id (no %q field in its answer); it may have created the object",
				call.HTTPCode, obj.IDField)
		}
	}
	return call
}

// adoptConflict settles a create the provider refused because an object
// already holds a value that must be unique, naming that object (id). The
// value may be our key — a second create of our own record, whose object
// the link adopts — or another one: HubSpot keeps a contact's email unique
// ("email address is the primary unique identifier to avoid duplicate
// contacts", https://developers.hubspot.com/docs/api/crm/contacts), so
// its 409 can name somebody else's contact, which never got our fields or
// our key. Only the lookup by our key tells the two apart.
func (c *HTTP) adoptConflict(ctx context.Context, obj object, rec Record, call Call, id string) Call {
	refused := call.Error
	call.Ambiguous = false // refused: the create made nothing
	if obj.Lookup == "" {
		call.Class = Permanent
		call.Error = fmt.Sprintf("%s; syncdesk cannot look our key %s up to tell whether it is ours: %s",
			c.holds(obj, id), rec.Key, refused)
		return call
	}
	look := c.Lookup(ctx, rec.LocalType, rec.Key)
	call.Checked = &look
	switch {
	case look.Class != OK:
		call.Class = look.Class
		call.Error = fmt.Sprintf("%s; looking our key %s up to tell whether it is ours failed (%s): %s",
			c.holds(obj, id), rec.Key, look.Error, refused)
	case len(look.Found) == 1:
		// Ours: the one named, or, when another value clashed, the object
		// that carries our key already, which is the one the create was for.
		call.Class, call.ExternalID = OK, look.Found[0]
		call.Error = fmt.Sprintf("the provider already holds this record as %s (HTTP %d); syncdesk adopted it", look.Found[0], call.HTTPCode)
	case len(look.Found) > 1:
		call.Class, call.Found = Permanent, look.Found
		call.Error = fmt.Sprintf("%d objects carry our key %s (ids %s): a person must decide which one to keep",
			len(look.Found), rec.Key, strings.Join(look.Found, ", "))
	case !obj.StrongLookup():
		// A search that lags may not show our own object made a moment
		// ago: ask again later rather than call it somebody else's.
		call.Class = Temporary
		call.Error = fmt.Sprintf("%s; a search for our key %s does not show it yet: %s", c.holds(obj, id), rec.Key, refused)
	default:
		call.Class = Permanent
		call.Error = fmt.Sprintf("%s, and it is not one of ours (it does not carry our key %s): fix the record, or that %s at %s, then retry. %s",
			c.holds(obj, id), rec.Key, obj.Remote, c.provider(), refused)
	}
	return call
}

// holds says that the provider refused a create because id holds one of
// its values already, for an error.
func (c *HTTP) holds(obj object, id string) string {
	return fmt.Sprintf("%s already has %s %s with a value of this record that must be unique (such as its email)", c.provider(), obj.Remote, id)
}

// provider is the service's provider by name, for words a person reads.
func (c *HTTP) provider() string { return cmp.Or(c.svc.Provider, c.name) }

// Update sends the full desired state of an existing object.
func (c *HTTP) Update(ctx context.Context, rec Record) Call {
	obj := c.objects[rec.LocalType]
	call, a := c.write(ctx, obj, "update", obj.Update, rec, nil)
	if call.Class == OK {
		call.ExternalID = rec.ExternalID
		if id := obj.IDOf(a.decoded); id != "" {
			call.ExternalID = id
		}
	}
	return call
}

// Upsert creates or updates the object carrying our key in one call. The
// provider's id comes from the answer (201 or 200); an answer without it
// (204) keeps the id already known, or reads the object by key. An answer
// of 300 says several objects carry the key: a person must choose.
func (c *HTTP) Upsert(ctx context.Context, rec Record) Call {
	obj := c.objects[rec.LocalType]
	call, a := c.write(ctx, obj, "upsert", obj.Upsert, rec, nil)
	switch {
	case call.HTTPCode == http.StatusMultipleChoices:
		call.Class, call.Ambiguous, call.Found = Permanent, false, choices(a.decoded, obj.Object)
		return call
	case call.Class != OK:
		return call
	}
	call.ExternalID = obj.IDOf(a.decoded)
	if call.ExternalID == "" {
		call.ExternalID = rec.ExternalID
	}
	if call.ExternalID == "" {
		// The object is there, its id unsaid: the next attempt upserts
		// again, harmlessly, and reads the id then or by lookup.
		call.Class, call.Ambiguous = Temporary, true
		call.Error = fmt.Sprintf("the provider answered HTTP %d without the object's id (no %q field in its answer)", call.HTTPCode, obj.IDField)
	}
	return call
}

// write sends a create, update or upsert of rec to endpoint.
func (c *HTTP) write(ctx context.Context, obj object, verb, endpoint string, rec Record, hdr http.Header) (Call, answer) {
	op := obj.Remote + "." + verb
	if obj.err != nil {
		return Call{Operation: op, Class: Permanent, Error: "misconfigured: " + obj.err.Error()}, answer{}
	}
	body, ctype, err := obj.render(rec)
	if err != nil {
		// The record cannot become this provider's body: retrying changes
		// nothing until the record (or the mapping) does.
		red := c.redact.ForPayload(rec.Payload)
		return Call{Operation: op, Class: Permanent, Error: red.Text(fmt.Sprintf("the %s body for %s could not be built from the record: %v", verb, c.name, err))}, answer{}
	}
	target, err := c.target(endpoint, map[string]string{"external_id": rec.ExternalID, "external_key": rec.Key})
	if err != nil {
		return Call{Operation: op, Class: Permanent, Error: "misconfigured endpoint: " + err.Error()}, answer{}
	}
	target.op, target.body, target.ctype, target.extra, target.secrets = op, body, ctype, hdr, body
	if obj.body != nil {
		target.secrets = rec.Payload
	}
	return c.do(ctx, target)
}

// target fills an endpoint template into a request's method and URL.
func (c *HTTP) target(endpoint string, vars map[string]string) (request, error) {
	ep, err := config.ParseEndpoint(endpoint)
	if err != nil {
		return request{}, err
	}
	return request{method: ep.Method, target: c.svc.BaseURL + fill(ep.Path, vars)}, nil
}

// Lookup finds every object carrying our key: by a GET (the key in the path
// or the query, or a read by unique property), or by a POST search whose
// body is the object's lookup_body. Only a 404 or an explicitly empty list
// means none: "none" lets the engine create, so an answer the connector
// cannot read is a temporary failure, never an empty result. An answer of
// 300 names several objects.
func (c *HTTP) Lookup(ctx context.Context, localType, key string) Call {
	call, _ := c.LookupObjects(ctx, localType, key)
	return call
}

// LookupObjects is Lookup with the objects found as the provider answered
// them, for a person to compare with the record ("check the provider now").
// An answer of 300 names its objects without them: their ids are in Found.
func (c *HTTP) LookupObjects(ctx context.Context, localType, key string) (Call, []map[string]any) {
	obj := c.objects[localType]
	op := obj.Remote + ".lookup"
	rq, err := c.target(obj.Lookup, map[string]string{"external_key": key})
	if err = cmp.Or(obj.err, err); err != nil {
		return Call{Operation: op, Class: Permanent, Error: "misconfigured lookup: " + err.Error()}, nil
	}
	rq.op = op
	if obj.search != nil {
		v, err := obj.search.Render([]byte(`{}`), mapping.Vars{Key: key, LocalType: localType})
		if err == nil {
			rq.body, err = mapping.JSON(v)
		}
		if err != nil {
			return Call{Operation: op, Class: Permanent, Error: "the lookup's search body could not be built: " + err.Error()}, nil
		}
		rq.ctype = contentTypes["json"]
	}
	call, a := c.do(ctx, rq)
	switch {
	case call.HTTPCode == http.StatusNotFound:
		call.Class, call.Error = OK, ""
		return call, nil
	case call.HTTPCode == http.StatusMultipleChoices:
		call.Class, call.Error, call.Found = OK, "", choices(a.decoded, obj.Object)
		return call, nil
	case call.Class != OK:
		return call, nil
	}
	found, items, err := carrying(a.decoded, obj.Object, key)
	if err != nil {
		call.Class, call.Error = Temporary, "the lookup's answer was not understood: "+err.Error()
		return call, nil
	}
	call.Found = found
	if len(found) == 1 {
		call.ExternalID = found[0]
	}
	return call, items
}

// List reads one page of the provider's objects. cursor is "" for the first
// page, then what the last page's NextCursor said: the provider's cursor,
// the last object's id (starting_after) or the next page's URL (next_url).
// A page it cannot read is a temporary failure, not a page of one odd
// object: reconciliation takes what a listing lacks for objects the
// provider lost, and creates them anew.
func (c *HTTP) List(ctx context.Context, localType, cursor string) (Page, Call) {
	obj := c.objects[localType]
	op := obj.Remote + ".list"
	rq, err := c.target(obj.List, map[string]string{"cursor": cursor})
	if obj.Paging.Style == "next_url" && cursor != "" {
		rq.target, err = c.sameOrigin(cursor)
	}
	if err != nil {
		return Page{}, Call{Operation: op, Class: Permanent, Error: "cannot read the next page: " + err.Error()}
	}
	rq.op = op
	call, a := c.do(ctx, rq)
	var p Page
	if call.Class != OK {
		return p, call
	}
	list, ok := listOf(a.decoded, obj.Object)
	if !ok {
		call.Class, call.Error = Temporary, "the list's answer was not understood: expected "+listShape(obj.Object)
		return p, call
	}
	p.Items = list
	p.NextCursor = nextCursor(a.decoded, obj.Object, list)
	return p, call
}

// nextCursor reads where the next page starts, per the object's paging.
func nextCursor(resp any, o config.Object, list []map[string]any) string {
	switch o.Paging.Style {
	case "starting_after":
		if more, _ := config.ValueAt(resp, cmp.Or(o.Paging.HasMore, "has_more")).(bool); more && len(list) > 0 {
			return o.IDOf(list[len(list)-1])
		}
		return ""
	case "next_url":
		return config.StringAt(resp, o.Paging.NextURL)
	}
	return config.StringAt(resp, cmp.Or(o.Paging.Cursor, "next_cursor"))
}

// sameOrigin turns a next page's URL, as a path or absolute, into one on the
// service's own origin: a listing must not lead syncdesk, with its
// credentials, to another host.
func (c *HTTP) sameOrigin(next string) (string, error) {
	base, err := url.Parse(c.svc.BaseURL)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(next)
	if err != nil {
		return "", fmt.Errorf("the next page's URL %q is not a URL", next)
	}
	if u.IsAbs() && (u.Scheme != base.Scheme || u.Host != base.Host) {
		return "", fmt.Errorf("the next page's URL leads to another host (%s)", u.Host)
	}
	if !strings.HasPrefix(u.Path, "/") {
		return "", fmt.Errorf("the next page's URL %q is not a path", next)
	}
	return base.Scheme + "://" + base.Host + u.RequestURI(), nil
}
