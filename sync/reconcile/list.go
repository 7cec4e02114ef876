package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/connector"
	"github.com/syncdesk/syncdesk/sync/mapping"
)

// listGroup is one list endpoint and the local types whose objects it
// returns. Types that share an endpoint (orders and leads both in /deals)
// are listed once, and each object goes to the type whose key it carries.
type listGroup struct {
	endpoint string
	types    []objectType // most specific key template first (see listGroups): the first that matches wins
}

// objectType is one routed local type as reconciliation sees it.
type objectType struct {
	name    string
	obj     config.Object
	key     *regexp.Regexp // our external key template, with the local id captured
	fixed   int            // how many characters of the key template are fixed, not the id
	compare []string       // the configured compared fields; nil: the payload's top-level fields
	// body is the object's body mapping, when it has one: the object is
	// then compared with the body the record maps to (see mappedDiff).
	body *mapping.Mapping
}

// endpointTypes names the local types listed from the endpoint that lists
// localType, itself among them: objects that share one id space.
func (rn *run) endpointTypes(localType string) []string {
	for _, g := range rn.groups {
		for _, t := range g.types {
			if t.name == localType {
				names := make([]string, len(g.types))
				for i, t := range g.types {
					names[i] = t.name
				}
				return names
			}
		}
	}
	return []string{localType}
}

// listGroups returns a service's list endpoints with their types, sorted.
func listGroups(s Service) []listGroup {
	byEndpoint := map[string]*listGroup{}
	for _, name := range slices.Sorted(maps.Keys(s.Config.Objects)) {
		o := withDefaults(s.Config.Objects[name])
		if o.List == "" {
			continue
		}
		g := byEndpoint[o.List]
		if g == nil {
			g = &listGroup{endpoint: o.List}
			byEndpoint[o.List] = g
		}
		g.types = append(g.types, typeOf(s, name))
	}
	out := make([]listGroup, 0, len(byEndpoint))
	for _, g := range byEndpoint {
		// The template with more fixed characters first: order_line_5 is an
		// order_line's key (order_line_{local_id}), though order_{local_id}
		// matches it too, with the id line_5. Equal ones by name.
		slices.SortStableFunc(g.types, func(a, b objectType) int { return b.fixed - a.fixed })
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].endpoint < out[j].endpoint })
	return out
}

// typeOf is one type of a service as reconciliation sees it.
func typeOf(s Service, name string) objectType {
	o := withDefaults(s.Config.Objects[name])
	t := objectType{name: name, obj: o, key: keyPattern(o.ExternalKey, name), compare: s.Config.Reconcile.Compare[name],
		fixed: len(strings.ReplaceAll(strings.ReplaceAll(o.ExternalKey, "{local_type}", name), "{local_id}", ""))}
	if !o.Body.IsZero() {
		t.body, _ = mapping.Compile(o.Body.Fields, o.Body.Expr) // refused at start when it does not compile
	}
	return t
}

// withDefaults fills what a service built in code may leave unsaid, as the
// config loader does for a file.
func withDefaults(o config.Object) config.Object {
	if o.KeyField == "" {
		o.KeyField = "external_key"
	}
	if o.IDField == "" {
		o.IDField = "id"
	}
	if o.ExternalKey == "" {
		o.ExternalKey = "{local_type}_{local_id}"
	}
	return o
}

func typesOf(groups []listGroup) []string {
	var out []string
	for _, g := range groups {
		for _, t := range g.types {
			out = append(out, t.name)
		}
	}
	sort.Strings(out)
	return out
}

// keyPattern turns a key template ("site_order_{local_id}") into a pattern
// that recognises our keys and captures the local id. A local id has no
// slash or space (the records API refuses them).
func keyPattern(tmpl, localType string) *regexp.Regexp {
	parts := strings.Split(tmpl, "{local_id}")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(strings.ReplaceAll(p, "{local_type}", localType))
	}
	return regexp.MustCompile("^" + strings.Join(parts, `([^/\s]+)`) + "$")
}

// parse returns the local id a key names, if it is one of this type's keys.
func (t objectType) parse(key string) (string, bool) {
	m := t.key.FindStringSubmatch(key)
	if m == nil {
		return "", false
	}
	for _, id := range m[2:] {
		if id != m[1] { // a template naming the id twice must name one id
			return "", false
		}
	}
	return m[1], true
}

// classify turns a listed object into a scratch row; false for an object
// that carries none of our keys (someone else's) or no id.
func (g listGroup) classify(runID int64, item map[string]any) (models.Seen, bool) {
	for _, t := range g.types {
		key := t.obj.KeyOf(item)
		localID, ok := t.parse(key)
		if key == "" || !ok {
			continue
		}
		id := t.obj.IDOf(item)
		if id == "" {
			return models.Seen{}, false
		}
		return models.Seen{RunID: runID, LocalType: t.name, LocalID: localID, ExternalKey: key, ExternalID: id,
			Fields: remoteFields(item, t)}, true
	}
	return models.Seen{}, false
}

// remoteFields is what the compare phase needs of an object: the compared
// fields when configured, else every top-level field but the id.
func remoteFields(item map[string]any, t objectType) string {
	keep := make(map[string]any, len(item))
	if t.body != nil {
		maps.Copy(keep, item) // compared by body path, nested: see mappedDiff
		delete(keep, t.obj.IDField)
	} else if t.compare != nil {
		for _, f := range t.compare {
			if v, ok := item[f]; ok {
				keep[f] = v
			}
		}
	} else {
		for k, v := range item {
			if k != t.obj.IDField {
				keep[k] = v
			}
		}
	}
	b, _ := json.Marshal(keep) // decoded JSON always encodes
	return string(b)
}

// listAll pages through every list endpoint, storing our objects a page at a time.
func (rn *run) listAll(ctx context.Context) error {
	for _, g := range rn.groups {
		cursor := ""
		// The cursors met so far: one that comes back means the provider
		// ignored it or its cursors go round. Neither is the listing's end,
		// and the objects not listed yet would look missing.
		met := map[string]bool{"": true}
		for {
			page, err := rn.listPage(ctx, g, cursor)
			if err != nil {
				return err
			}
			rows := make([]models.Seen, 0, len(page.Items))
			for _, item := range page.Items {
				if s, ok := g.classify(rn.row.ID, item); ok {
					rows = append(rows, s)
				}
			}
			if err := models.InsertSeen(rn.r.db.WithContext(ctx), rows); err != nil {
				return err
			}
			rn.listed += int64(len(page.Items))
			rn.scanned += int64(len(page.Items))
			rn.expected = max(rn.remoteEstimate, rn.listed) + rn.localTotal
			if err := rn.progress(ctx); err != nil {
				return err
			}
			if page.NextCursor == "" {
				break
			}
			if met[page.NextCursor] {
				return fmt.Errorf("list %s (%s): the cursor %q came back after %d objects, so the listing went round instead of reaching its end; "+
					"with part of the provider unseen, what it holds would look missing", rn.svc.Name, g.endpoint, page.NextCursor, rn.listed)
			}
			met[page.NextCursor] = true
			cursor = page.NextCursor
		}
	}
	rn.expected = rn.listed + rn.localTotal
	return rn.progress(ctx)
}

// listPage reads one page, retrying temporary failures a few times. A run
// whose listing fails ends failed: with part of the provider unseen, every
// object in the rest would look missing.
func (rn *run) listPage(ctx context.Context, g listGroup, cursor string) (connector.Page, error) {
	for attempt := 1; ; attempt++ {
		page, call := rn.svc.Conn.List(ctx, g.types[0].name, cursor)
		if call.Class == connector.OK {
			return page, nil
		}
		if ctx.Err() != nil {
			return page, ctx.Err()
		}
		// A spent allowance (connector.Call.Quota) comes back in an hour,
		// not seconds: the run ends now, saying why, rather than holding
		// the service's runs for its hours of waiting.
		if call.Class == connector.Permanent || call.Quota || attempt >= rn.r.opts.ListAttempts {
			return page, fmt.Errorf("list %s (%s) after %d attempts: %s", rn.svc.Name, g.endpoint, attempt, call.Error)
		}
		wait := call.RetryAfter
		if wait <= 0 {
			wait = min(rn.svc.Config.Retry.Base*time.Duration(attempt), 30*time.Second)
		}
		select {
		case <-ctx.Done():
			return page, ctx.Err()
		case <-time.After(wait):
		}
	}
}
