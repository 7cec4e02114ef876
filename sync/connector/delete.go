package connector

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/syncdesk/syncdesk/sync/mapping"
)

// CanDelete reports whether the service can remove the object of a deleted
// record: by a delete, or by an archive.
func (c *HTTP) CanDelete(localType string) bool {
	o := c.objects[localType]
	return o.Delete != "" || o.Archive != ""
}

// Delete removes the object rec names (its external id, or our key): by
// the object's delete, or by its archive, an update whose body is
// archive_body. An answer of 404 means the object is gone already, which is
// what was asked: done, not failed. A delete whose answer was lost and
// that took effect gets that 404 when it is sent again.
func (c *HTTP) Delete(ctx context.Context, rec Record) Call {
	obj := c.objects[rec.LocalType]
	verb, endpoint := "delete", obj.Delete
	if endpoint == "" {
		verb, endpoint = "archive", obj.Archive
	}
	op := obj.Remote + "." + verb
	rq, err := c.target(endpoint, map[string]string{"external_id": rec.ExternalID, "external_key": rec.Key})
	if err = cmp.Or(obj.err, err); err != nil {
		return Call{Operation: op, Class: Permanent, Error: "misconfigured " + verb + ": " + err.Error()}
	}
	rq.op = op
	if verb == "archive" && obj.archive != nil {
		v, err := obj.archive.Render(rec.Payload, vars(rec))
		if err == nil {
			rq.body, err = mapping.JSON(v)
		}
		if err != nil {
			return Call{Operation: op, Class: Permanent, Error: "the archive body could not be built: " + err.Error()}
		}
		rq.ctype, rq.secrets = contentTypes["json"], rec.Payload
		if obj.Encoding == "form" {
			if rq.body, err = mapping.Form(v); err != nil {
				return Call{Operation: op, Class: Permanent, Error: "the archive body could not be built: " + err.Error()}
			}
			rq.ctype = contentTypes["form"]
		}
	}
	call, _ := c.do(ctx, rq)
	call.ExternalID = rec.ExternalID
	if call.HTTPCode == http.StatusNotFound {
		call.Class, call.Ambiguous = OK, false
		call.Error = fmt.Sprintf("%s holds no object %s (HTTP 404): it is gone already", c.name, cmp.Or(rec.ExternalID, rec.Key))
	}
	return call
}
