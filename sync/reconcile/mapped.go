package reconcile

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/mapping"
)

// An object whose body is built by a mapping (README, "Body mapping") does
// not look like the record's payload at the provider: HubSpot keeps
// {"properties": {"firstname": …}} for a payload's first_name. Such an
// object is compared with the body the record would be sent as, path by
// path, and as text, since providers give back in their own types what
// they were sent (HubSpot stores every property as a string, Stripe takes
// form values and answers in JSON numbers).

// mappedDiff returns the body paths in which the remote object differs from
// the body the record maps to, with both values, sorted; only the paths the
// listing shows.
func mappedDiff(payload, remote string, t objectType) []models.FieldDifference {
	body, err := t.body.Render([]byte(payload), mapping.Vars{LocalType: t.name})
	if err != nil {
		return []models.FieldDifference{{Field: fmt.Sprintf("(the record cannot be mapped: %v)", err)}}
	}
	var got any
	if json.Unmarshal([]byte(remote), &got) != nil {
		return []models.FieldDifference{{Field: "(unreadable JSON)"}}
	}
	want := map[string]string{}
	leaves("", body, want)
	delete(want, t.obj.KeyField) // set by the outbox; our key, not the record's data
	have := map[string]string{}
	leaves("", got, have)
	paths := t.compare
	if paths == nil {
		paths = slices.Sorted(maps.Keys(want))
	}
	var differ []models.FieldDifference
	for _, p := range paths {
		// A path the listing does not bring (a SOQL query that selects
		// only Id and the key) cannot be compared: name the field in the
		// list query to compare it.
		if h, listed := have[p]; listed && want[p] != h {
			differ = append(differ, models.FieldDifference{Field: p, Here: want[p], There: h})
		}
	}
	return differ
}

// leaves writes every leaf of v under its dotted path as text: null and ""
// alike (a form value cleared is an empty string), numbers by value.
func leaves(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			leaves(p, e, out)
		}
		return
	case nil:
		out[prefix] = ""
	case string:
		out[prefix] = canonicalNumber(x)
	case float64:
		out[prefix] = strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		out[prefix] = strconv.Itoa(x)
	case *big.Int:
		out[prefix] = x.String()
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
}

// canonicalNumber writes a number given as text by value ("19.990" and
// "19.99" alike); other text stays as it is.
func canonicalNumber(s string) string {
	if f, err := strconv.ParseFloat(s, 64); err == nil && s != "" && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return s
}
