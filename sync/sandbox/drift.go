package sandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
)

// driftPath is the sandbox's admin endpoint that makes its objects drift
// from syncdesk's records, so the demo's reconciliation has something to
// find. It exists only on the sandbox, which listens on loopback.
const driftPath = "/_sandbox/drift"

// Drift says how many objects to disturb, each kind on different objects.
type Drift struct {
	Delete    int `json:"delete"`    // objects removed: missing_remote
	Alter     int `json:"alter"`     // a field changed behind syncdesk's back: field_mismatch
	Unlinked  int `json:"unlinked"`  // new objects carrying keys syncdesk never sent: unlinked_remote
	Duplicate int `json:"duplicate"` // a second object for an existing key: duplicate_remote
}

// Drift disturbs the provider's objects as d says and reports what it did.
// Nothing is announced by webhook: that is what makes it drift.
func (p *Provider) Drift(d Drift) []string {
	objs := p.Objects()
	sort.Slice(objs, func(i, j int) bool { return fmt.Sprint(objs[i]["id"]) < fmt.Sprint(objs[j]["id"]) })
	var did []string
	next := 0
	take := func() (map[string]any, bool) {
		if next >= len(objs) {
			return nil, false
		}
		next++
		return objs[next-1], true
	}
	for range d.Delete {
		if o, ok := take(); ok && p.Delete(fmt.Sprint(o["id"])) {
			did = append(did, "deleted "+fmt.Sprint(o["id"]))
		}
	}
	for range d.Alter {
		if o, ok := take(); ok && p.SetField(fmt.Sprint(o["id"]), "title", "edited in the provider") {
			did = append(did, "altered "+fmt.Sprint(o["id"]))
		}
	}
	for i := range d.Unlinked {
		id := p.Insert(map[string]any{"external_key": fmt.Sprintf("site_order_drift_%d", i), "title": "made in the provider"})
		did = append(did, "inserted unlinked "+id)
	}
	for range d.Duplicate {
		if o, ok := take(); ok {
			dup := map[string]any{}
			for k, v := range o {
				if k != "id" {
					dup[k] = v
				}
			}
			did = append(did, "duplicated "+fmt.Sprint(o["external_key"])+" as "+p.Insert(dup))
		}
	}
	return did
}

// serveDrift answers POST /_sandbox/drift with a JSON Drift body.
func (p *Provider) serveDrift(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, `POST a drift: {"delete":3,"alter":2,"unlinked":1,"duplicate":1}`)
		return
	}
	var d Drift
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil || d.Delete < 0 || d.Alter < 0 || d.Unlinked < 0 || d.Duplicate < 0 ||
		d.Delete+d.Alter+d.Unlinked+d.Duplicate > 10000 {
		writeError(w, http.StatusBadRequest, `the body must be {"delete":N,"alter":N,"unlinked":N,"duplicate":N} with small non-negative numbers`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"done": p.Drift(d)})
}
