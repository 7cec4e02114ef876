package config

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/sync/mapping"
)

// validate checks one routed type's settings; bad reports one bad setting
// under objects.TYPE.
func (o Object) validate(bad func(setting, format string, a ...any)) {
	upsert := o.Upsert != ""
	for field, v := range map[string]string{"create": o.Create, "update": o.Update, "lookup": o.Lookup, "list": o.List, "upsert": o.Upsert} {
		optional := field == "lookup" || field == "list" || field == "upsert" || (upsert && (field == "create" || field == "update"))
		if v == "" && optional {
			continue
		}
		if ep, err := ParseEndpoint(v); err != nil {
			bad(field, "%v", err)
		} else if ep.Method == "DELETE" {
			bad(field, "%q: DELETE removes an object; it goes in the delete setting", v)
		}
	}
	o.validateDelete(bad)
	if o.Update != "" && !strings.Contains(o.Update, "{external_id}") && !strings.Contains(o.Update, "{external_key}") {
		bad("update", "the path needs {external_id} (or {external_key}, for a provider that updates by our key)")
	}
	if upsert && !strings.Contains(o.Upsert, "{external_key}") {
		bad("upsert", "the path needs {external_key}: an upsert finds the object by our key")
	}
	o.validateLookup(bad)
	if !strings.Contains(o.ExternalKey, "{local_id}") {
		bad("external_key", "the key template needs {local_id} to be unique per record")
	}
	switch o.Encoding {
	case "", "json", "form":
	default:
		bad("encoding", "%q is not json or form", o.Encoding)
	}
	if slices.Contains(o.Fields, "") {
		bad("fields", "a field name is empty")
	}
	o.validateBody(bad)
	switch o.Paging.Style {
	case "", "cursor", "starting_after":
	case "next_url":
		if o.Paging.NextURL == "" {
			bad("paging.next_url", "the next_url style needs the path of the next page's URL in the answer (e.g. nextRecordsUrl)")
		}
	default:
		bad("paging.style", "%q is not cursor, starting_after or next_url", o.Paging.Style)
	}
	if c := o.Conflict; c != nil {
		if c.Status < 400 || c.Status > 499 {
			bad("conflict.status", "a refused create answers 4xx (HubSpot: 409), got %d", c.Status)
		}
		if c.IDPath == "" && c.IDPattern == "" {
			bad("conflict", "say where the answer names the existing object: id_path or id_pattern")
		}
		if c.IDPattern != "" {
			if re, err := regexp.Compile(c.IDPattern); err != nil || re.NumSubexp() < 1 {
				bad("conflict.id_pattern", "must be a regular expression whose first group is the id (e.g. 'Existing ID: (\\d+)')")
			}
		}
	}
}

// validateDelete checks how the object of a deleted record goes: by a
// delete, or by an archive (an update with its own body), never both.
func (o Object) validateDelete(bad func(setting, format string, a ...any)) {
	byID := func(setting, v string) {
		if !strings.Contains(v, "{external_id}") && !strings.Contains(v, "{external_key}") {
			bad(setting, "the path needs {external_id} (or {external_key}): it names the object to remove")
		}
	}
	if o.Delete != "" {
		if _, err := ParseEndpoint(o.Delete); err != nil {
			bad("delete", "%v", err)
		}
		byID("delete", o.Delete)
	}
	switch {
	case o.Delete != "" && o.Archive != "":
		bad("archive", "give delete or archive, not both")
	case o.Archive != "":
		if ep, err := ParseEndpoint(o.Archive); err != nil {
			bad("archive", "%v", err)
		} else if ep.Method == "GET" || ep.Method == "DELETE" {
			bad("archive", "%q: an archive is an update (PATCH, PUT or POST) with archive_body; for a DELETE use the delete setting", o.Archive)
		}
		byID("archive", o.Archive)
		if o.ArchiveBody.IsZero() {
			bad("archive_body", "an archive needs the body that marks the object archived, e.g. {archived: true}")
		} else if _, err := mapping.Compile(o.ArchiveBody.Fields, o.ArchiveBody.Expr); err != nil {
			bad("archive_body", "%v", err)
		}
	case !o.ArchiveBody.IsZero():
		bad("archive_body", "archive_body goes with an archive setting, which is not given")
	}
}

func (o Object) validateLookup(bad func(setting, format string, a ...any)) {
	if o.Lookup != "" && !strings.Contains(o.Lookup, "{external_key}") && o.LookupBody == "" {
		bad("lookup", "the path needs {external_key}, or a POST with lookup_body")
	}
	if o.LookupBody != "" {
		if ep, err := ParseEndpoint(o.Lookup); err == nil && ep.Method != "POST" {
			bad("lookup_body", "a search body goes with a POST lookup, not %s", ep.Method)
		}
		if _, err := mapping.Compile(nil, o.LookupBody); err != nil {
			bad("lookup_body", "%v", err)
		}
	}
	switch o.LookupConsistency {
	case "", "strong", "eventual":
	default:
		bad("lookup_consistency", "%q is not strong or eventual", o.LookupConsistency)
	}
}

// validateBody compiles the body mapping and checks that it reads only the
// fields records of the type carry, when the configuration lists them: a
// typo there would otherwise surface as a failed send of every record.
func (o Object) validateBody(bad func(setting, format string, a ...any)) {
	if o.Body.IsZero() {
		return
	}
	m, err := mapping.Compile(o.Body.Fields, o.Body.Expr)
	var me *mapping.Error
	switch {
	case errors.As(err, &me):
		bad(me.Target, "%s", strings.TrimPrefix(me.Error(), me.Target+": "))
		return
	case err != nil:
		bad("body", "%v", err)
		return
	}
	if len(o.Fields) == 0 {
		return
	}
	for _, r := range m.Reads() {
		if !slices.Contains(o.Fields, r.Field) {
			bad(r.Target, "reads .%s, which records of this type do not carry (fields: %s)", r.Field, strings.Join(o.Fields, ", "))
		}
	}
}

// Guarantee says, in words, how a lost answer to a create is kept from
// becoming a second object of one type, and whether it is kept at all.
type Guarantee struct {
	Words string
	Safe  bool
}

// Guarantee is the guard of the type routed to the service as localType.
// Its words are the Services page's.
func (s Service) Guarantee(localType string) Guarantee {
	g := s.guarantee(s.Objects[localType])
	if s.LookupBeforeCreate && s.Objects[localType].Lookup != "" {
		g.Words += "; every create looks the key up first"
	}
	return g
}

func (s Service) guarantee(o Object) Guarantee {
	who := cmp.Or(s.Provider, "the provider")
	strong := o.StrongLookup()
	lookup := "a lookup by key"
	if !strong {
		lookup = "a search by key"
	}
	switch {
	case o.Upsert != "":
		return Guarantee{"upsert by external ID: a repeat updates the same object", true}
	case s.IdempotencyHeader != "" && s.IdempotencyWindow > 0:
		g := Guarantee{fmt.Sprintf("idempotency key, replayed by %s for %s", who, windowWords(s.IdempotencyWindow)), true}
		if o.Lookup != "" {
			g.Words += "; after that, " + lookup
		}
		return g
	case s.IdempotencyHeader != "":
		g := Guarantee{"idempotency key (" + s.IdempotencyHeader + ")", true}
		if o.Lookup != "" {
			g.Words += ", and " + lookup + " after an unknown outcome"
		}
		return g
	case o.Conflict != nil:
		g := Guarantee{fmt.Sprintf("unique property, %d adopted", o.Conflict.Status), true}
		if strong {
			g.Words += "; after an unknown outcome, read by that property first"
		}
		return g
	case strong:
		return Guarantee{"lookup by key after an unknown outcome, before any new create", true}
	case o.Lookup != "":
		return Guarantee{"only a search that can lag: a lost answer may become a second object", false}
	}
	return Guarantee{"none: a lost answer may become a second object", false}
}

// StrongLookup reports whether the object has a lookup that sees an object
// as soon as it is made, not a search that can lag.
func (o Object) StrongLookup() bool { return o.Lookup != "" && o.LookupConsistency != "eventual" }

// windowWords says a replay window the way a person would: 24 h, 90 min.
func windowWords(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return d.String()
}
