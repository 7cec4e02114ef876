package connector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/mapping"
)

// Record is what a send carries of one link: who the record is, our key for
// it, the provider's id once known, and its payload as stored.
type Record struct {
	LocalType, LocalID string
	Key                string // our external key
	ExternalID         string // the provider's id; "" before the first create
	Payload            []byte // the record's JSON object
}

// object is one routed type, prepared once by NewHTTP: its settings, its
// compiled body and search mappings, and its conflict pattern.
type object struct {
	config.Object
	body     *mapping.Mapping // nil: the payload as it is, with our key at key_field
	search   *mapping.Mapping // the lookup's search body, for a POST lookup
	archive  *mapping.Mapping // the archive's body, for an object archived rather than deleted
	conflict *regexp.Regexp
	// err is a setting that does not compile. Complete refuses such a
	// configuration at start, so this is for a caller that skipped it:
	// every call fails, saying why, rather than sending a wrong body.
	err error
}

func prepare(name, typ string, o config.Object) object {
	p := object{Object: o}
	fail := func(key string, err error) {
		if p.err == nil {
			p.err = fmt.Errorf("setting services.%s.objects.%s.%s: %w", name, typ, key, err)
		}
	}
	var err error
	switch {
	case !o.Body.IsZero():
		if p.body, err = mapping.Compile(o.Body.Fields, o.Body.Expr); err != nil {
			fail("body", err)
		}
	case o.Encoding == "form":
		// The payload as it is, with our key at key_field, form-encoded:
		// the default body through the mapping, which encodes forms.
		path, _ := json.Marshal(strings.Split(o.KeyField, "."))
		if p.body, err = mapping.Compile(nil, ". | setpath("+string(path)+"; $key)"); err != nil {
			fail("key_field", err)
		}
	}
	if !o.ArchiveBody.IsZero() {
		if p.archive, err = mapping.Compile(o.ArchiveBody.Fields, o.ArchiveBody.Expr); err != nil {
			fail("archive_body", err)
		}
	}
	if o.LookupBody != "" {
		if p.search, err = mapping.Compile(nil, o.LookupBody); err != nil {
			fail("lookup_body", err)
		}
	}
	if o.Conflict != nil && o.Conflict.IDPattern != "" {
		if p.conflict, err = regexp.Compile(o.Conflict.IDPattern); err != nil {
			fail("conflict.id_pattern", err)
		}
	}
	return p
}

// contentTypes of the body encodings.
var contentTypes = map[string]string{"": "application/json", "json": "application/json",
	"form": "application/x-www-form-urlencoded"}

// render builds the request body of a create, update or upsert from the
// record: through the body mapping when there is one, else the payload with
// our key added at key_field.
func (o object) render(rec Record) ([]byte, string, error) {
	ctype := contentTypes[o.Encoding]
	if o.body == nil {
		b, err := WithKey(rec.Payload, o.KeyField, rec.Key)
		return b, ctype, err
	}
	v, err := o.body.Render(rec.Payload, vars(rec))
	if err != nil {
		return nil, "", err
	}
	if o.Encoding == "form" {
		b, err := mapping.Form(v)
		return b, ctype, err
	}
	b, err := mapping.JSON(v)
	return b, ctype, err
}

func vars(rec Record) mapping.Vars {
	return mapping.Vars{Key: rec.Key, LocalID: rec.LocalID, LocalType: rec.LocalType, ExternalID: rec.ExternalID}
}

// WithKey adds our external key to the payload under field, or sets it
// there. A stored payload is canonical JSON (compact, keys sorted:
// models.CanonicalPayload), so the key is spliced into its bytes at its
// sorted place rather than the payload decoded into a map and encoded
// again: the body comes out byte for byte as that round trip made it, for
// the price of a scan. gjson walks the top level without decoding values.
func WithKey(payload []byte, field, key string) ([]byte, error) {
	obj := gjson.ParseBytes(payload)
	if !obj.IsObject() || !gjson.ValidBytes(payload) {
		return nil, fmt.Errorf("the stored payload is not a JSON object")
	}
	f, _ := json.Marshal(field) // escaped as the encoder escapes map keys
	k, _ := json.Marshal(key)
	member := append(append(f, ':'), k...)
	// Replace payload[from:to] with the member, or insert it at from.
	from, to, members := -1, -1, 0
	obj.ForEach(func(name, value gjson.Result) bool {
		members++
		switch c := strings.Compare(name.Str, field); {
		case c == 0:
			from, to = name.Index, value.Index+len(value.Raw)
			return false
		case c > 0:
			from, to = name.Index, name.Index
			member = append(member, ',')
			return false
		}
		return true
	})
	if from < 0 { // every key sorts before ours, or there is none: last
		from = bytes.LastIndexByte(payload, '}')
		to = from
		if members > 0 {
			member = append([]byte{','}, member...)
		}
	}
	out := make([]byte, 0, len(payload)-(to-from)+len(member))
	out = append(out, payload[:from]...)
	out = append(out, member...)
	return append(out, payload[to:]...), nil
}

// fill substitutes {name} in a path template, escaping each value for where
// it stands: the path or the query. A query parameter that is nothing but a
// placeholder filled with "" is left out (Stripe refuses an empty
// starting_after), and the query is re-encoded, so that a template may
// hold a readable SOQL query with spaces.
func fill(tmpl string, vars map[string]string) string {
	path, query, hasQuery := strings.Cut(tmpl, "?")
	for k, v := range vars {
		path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(v))
	}
	if !hasQuery {
		return path
	}
	q := url.Values{}
	for pair := range strings.SplitSeq(query, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if name, ok := placeholder(v); ok && vars[name] == "" {
			continue
		}
		for name, val := range vars {
			for _, q := range []string{"'", `"`} {
				v = strings.ReplaceAll(v, q+"{"+name+"}"+q, q+url.QueryEscape(quoted(val, q))+q)
			}
			v = strings.ReplaceAll(v, "{"+name+"}", url.QueryEscape(val))
		}
		ku, err1 := url.QueryUnescape(k)
		vu, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil { // a literal % that is no escape: keep it as written
			ku, vu = k, v
		}
		q.Add(ku, vu)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// quoted escapes val for a placeholder the template quotes with q, as in
// Stripe's metadata['syncdesk_key']:'{external_key}': a backslash before
// each q and each backslash. Stripe's search query language reads a quote
// inside a quoted value only so escaped ("You can escape quotes inside of
// quotes with a backslash", https://docs.stripe.com/search#search-query-language),
// and answers 400 to a query that a key such as customer_O'Brien cut short;
// SOQL reads \' and \\ the same way
// (https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_quotedstringescapes.htm).
func quoted(val, q string) string {
	return strings.NewReplacer(`\`, `\\`, q, `\`+q).Replace(val)
}

// placeholder reports whether v is exactly one {name}.
func placeholder(v string) (string, bool) {
	if len(v) > 2 && v[0] == '{' && v[len(v)-1] == '}' && !strings.ContainsAny(v[1:len(v)-1], "{}") {
		return v[1 : len(v)-1], true
	}
	return "", false
}
