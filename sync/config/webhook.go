package config

import (
	"cmp"
	"embed"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/syncdesk/syncdesk/sync/mapping"
)

// Webhook says how a service signs its webhooks and what they do.
type Webhook struct {
	// Scheme is stripe, standard (Standard Webhooks), github, shopify,
	// hubspot (HubSpot's v3 signature) or hmac.
	Scheme string `yaml:"scheme"`
	// Secrets are tried in turn: during a rotation, list the new and the old.
	// ${VAR} is read from the environment.
	Secrets   []string      `yaml:"secrets"`
	Tolerance time.Duration `yaml:"tolerance"`
	// URL is the address the provider calls, for schemes that sign it
	// (hubspot), when a proxy in front of syncdesk changes the path or
	// host; by default the request's own is used.
	URL string `yaml:"url"`
	// For the generic hmac scheme.
	Header          string `yaml:"header"`
	Encoding        string `yaml:"encoding"` // hex or base64
	Prefix          string `yaml:"prefix"`
	TimestampHeader string `yaml:"timestamp_header"`
	IDHeader        string `yaml:"id_header"`
	IDPath          string `yaml:"id_path"`

	// EventID is where each event's id sits, for deliveries that carry a
	// JSON list of events (HubSpot); a delivery of one event is known by
	// the id its scheme gives (a header, or the body's id).
	EventID string `yaml:"event_id"`
	// EventType is where an event's type sits (default .type).
	EventType string `yaml:"event_type"`
	// States is the order a record's state moves in, for set_state
	// effects: an event never moves it backwards.
	States []string `yaml:"states"`
	// StateField is the record's field that holds the state (default status).
	StateField string `yaml:"state_field"`
	// Paths say where every event keeps its object, ids and time; an
	// effect may say otherwise for its own events.
	Paths EventPaths `yaml:"paths"`
	// Effects is the table from event type to effect, or the name of a
	// table shipped in the binary (payments or crm: the demo's; none).
	Effects Effects `yaml:"effects"`
}

// EventPaths are gojq expressions on one event (README, "Webhook effects").
type EventPaths struct {
	// Object is the provider's object the event is about.
	Object string `yaml:"object"`
	// ID is the provider's id of the object, Key our key on it; an event
	// is matched to its link by either.
	ID  string `yaml:"id"`
	Key string `yaml:"key"`
	// OccurredAt is when the change happened (unix seconds or
	// milliseconds, or RFC 3339): an update older than the record's last
	// change is old news.
	OccurredAt string `yaml:"occurred_at"`
}

// WithDefaults returns p with each empty path taken from def.
func (p EventPaths) WithDefaults(def EventPaths) EventPaths {
	pick := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	return EventPaths{Object: pick(p.Object, def.Object), ID: pick(p.ID, def.ID), Key: pick(p.Key, def.Key),
		OccurredAt: pick(p.OccurredAt, def.OccurredAt)}
}

// Effects is a webhook's effect table, or the name of a shipped one.
type Effects struct {
	// Set names a shipped table: payments, crm or none.
	Set   string
	Table map[string]Effect
}

// EffectSet is the shipped effect table name.
func EffectSet(name string) Effects { return Effects{Set: name} }

// UnmarshalYAML reads a name or a table.
func (e *Effects) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Decode(&e.Set)
	case yaml.MappingNode:
		return n.Decode(&e.Table)
	}
	return fmt.Errorf("line %d: effects is a table from event type to effect, or payments, crm or none", n.Line)
}

// The kinds of effect; an Effect is exactly one.
const (
	EffectSetState     = "set_state"
	EffectUpdateFields = "update_fields"
	EffectKeepOurs     = "keep_ours"
	EffectMarkDeleted  = "mark_deleted"
	EffectAdopt        = "adopt"
	EffectIgnore       = "ignore"
)

// Effect is what an event of one type does to the local side.
type Effect struct {
	// SetState moves the record's state to this one of Webhook.States,
	// never backwards.
	SetState string `yaml:"set_state"`
	// UpdateFields sets record fields from the event: a map of field to
	// expression (one yielding nothing leaves its field alone), or one
	// expression yielding an object of fields.
	UpdateFields Body `yaml:"update_fields"`
	// KeepOurs: the provider is not the source of the object's fields;
	// where it holds other values than our record, ours are pushed again.
	KeepOurs bool `yaml:"keep_ours"`
	// MarkDeleted marks the link's remote object deleted, then leave (a
	// person decides) or recreate (a new object is created at once).
	MarkDeleted string `yaml:"mark_deleted"`
	// Adopt links an object that carries our key to the link that lacks
	// its id; with NewRecords, an object no link knows becomes a new
	// record of that local type ({service} is the service's name).
	Adopt      bool   `yaml:"adopt"`
	NewRecords string `yaml:"new_records"`
	// Ignore does nothing, on purpose.
	Ignore bool `yaml:"ignore"`
	// Paths override the webhook's for these events.
	EventPaths `yaml:",inline"`
}

// UnmarshalYAML also reads the word ignore on its own.
func (e *Effect) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value != EffectIgnore {
			return fmt.Errorf("line %d: %q is not an effect: write ignore, or a map such as {set_state: paid}", n.Line, n.Value)
		}
		e.Ignore = true
		return nil
	}
	// n.Decode does not inherit the file's strictness: a misspelt key
	// (idd:) would be dropped in silence and the default path used.
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(effectKeys, k.Value) {
			return fmt.Errorf("line %d: %q is not a setting of an effect (%s)", k.Line, k.Value, strings.Join(effectKeys, ", "))
		}
	}
	type plain Effect
	return n.Decode((*plain)(e))
}

// effectKeys are the settings an effect may have.
var effectKeys = []string{EffectSetState, EffectUpdateFields, EffectKeepOurs, EffectMarkDeleted, EffectAdopt, "new_records", EffectIgnore,
	"object", "id", "key", "occurred_at"}

// Kinds lists the kinds the effect names; a valid one names one.
func (e Effect) Kinds() []string {
	var out []string
	for kind, set := range map[string]bool{EffectSetState: e.SetState != "", EffectUpdateFields: !e.UpdateFields.IsZero(),
		EffectKeepOurs: e.KeepOurs, EffectMarkDeleted: e.MarkDeleted != "", EffectAdopt: e.Adopt, EffectIgnore: e.Ignore} {
		if set {
			out = append(out, kind)
		}
	}
	slices.Sort(out)
	return out
}

// Kind is the effect's one kind, or "" when it names none or several.
func (e Effect) Kind() string {
	if k := e.Kinds(); len(k) == 1 {
		return k[0]
	}
	return ""
}

// Mark-deleted follow-ups.
const (
	DeletedLeave    = "leave"
	DeletedRecreate = "recreate"
)

// Default paths and fields, where the webhook says nothing.
const (
	defaultEventType  = ".type"
	defaultStateField = "status"
	defaultObject     = ".data.object // .data"
)

// effectSets are the tables shipped in the binary (README, "Webhook effects").
//
//go:embed effects/*.yaml
var effectSets embed.FS

// Resolved returns the webhook with its shipped table, if it names one, in
// place, and every default filled in: what the inbox runs.
func (w Webhook) Resolved() (Webhook, error) {
	if s := w.Effects.Set; s != "" && s != "none" {
		raw, err := effectSets.ReadFile("effects/" + s + ".yaml")
		if err != nil {
			return w, fmt.Errorf("%q is not payments, crm or none", s)
		}
		var set Webhook
		if err := yaml.Unmarshal(raw, &set); err != nil {
			return w, fmt.Errorf("the shipped table %s: %w", s, err) // a test reads every one
		}
		if len(w.States) == 0 {
			w.States = set.States
		}
		if w.StateField == "" {
			w.StateField = set.StateField
		}
		w.Paths = w.Paths.WithDefaults(set.Paths)
		w.Effects = set.Effects
	}
	if w.EventType == "" {
		w.EventType = defaultEventType
	}
	if w.StateField == "" {
		w.StateField = defaultStateField
	}
	if w.Paths.Object == "" {
		w.Paths.Object = defaultObject
	}
	return w, nil
}

// Entries lists the table's keys in the order EffectFor chooses among
// them: exact event types first (sorted), then patterns from the longest
// (* stands for any characters but /), ties broken by the pattern's text.
func (w Webhook) Entries() []string {
	keys := slices.Collect(maps.Keys(w.Effects.Table))
	slices.SortFunc(keys, func(a, b string) int {
		pa, pb := isPattern(a), isPattern(b)
		switch {
		case pa != pb && pa:
			return 1
		case pa != pb:
			return -1
		case pa && len(a) != len(b):
			return cmp.Compare(len(b), len(a))
		}
		return cmp.Compare(a, b)
	})
	return keys
}

// FirstEntry is the first of entries (in Entries' order) that names or
// matches eventType.
func FirstEntry(entries []string, eventType string) (string, bool) {
	for _, k := range entries {
		if k == eventType {
			return k, true
		}
		if isPattern(k) {
			if ok, _ := path.Match(k, eventType); ok {
				return k, true
			}
		}
	}
	return "", false
}

// EffectFor is the effect for an event type and the entry that chose it.
func (w Webhook) EffectFor(eventType string) (Effect, string, bool) {
	k, ok := FirstEntry(w.Entries(), eventType)
	return w.Effects.Table[k], k, ok
}

func isPattern(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// schemes lists the signature schemes, for the error that names them.
var schemes = []string{"stripe", "standard", "github", "shopify", "hubspot", "hmac"}

func (w Webhook) validate(name string, objects map[string]Object) []error {
	var errs []error
	bad := func(setting, format string, a ...any) {
		errs = append(errs, fmt.Errorf("setting services.%s.webhook.%s: %s", name, setting, fmt.Sprintf(format, a...)))
	}
	switch w.Scheme {
	case "stripe", "standard", "github", "shopify":
	case "hubspot":
		if w.EventID == "" {
			bad("event_id", "HubSpot sends a list of events: say where each event's id sits (the hubspot preset: its subscriptionId and eventId)")
		}
	case "hmac":
		if w.Header == "" {
			bad("header", "the hmac scheme needs the signature header's name")
		}
		if w.Encoding != "hex" && w.Encoding != "base64" {
			bad("encoding", "%q is not hex or base64", w.Encoding)
		}
		if w.IDHeader == "" && w.IDPath == "" && w.EventID == "" {
			bad("id_header", "the hmac scheme needs id_header, id_path or event_id to find the event id")
		}
	default:
		bad("scheme", "%q is not %s", w.Scheme, orList(schemes))
	}
	if len(w.Secrets) == 0 || len(w.Secrets) > 2 {
		bad("secrets", "give one secret, or two during a rotation")
	}
	for i, sec := range w.Secrets {
		if v, missing := ExpandEnv(sec); v == "" || len(missing) > 0 {
			bad(fmt.Sprintf("secrets[%d]", i), "empty, or environment variable %s is not set", strings.Join(missing, ", "))
		}
	}
	if w.Tolerance < 0 {
		bad("tolerance", "must be positive")
	}
	if u, err := url.Parse(w.URL); w.URL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		bad("url", "%q is not an http(s) URL", w.URL)
	}
	r, err := w.Resolved()
	if err != nil {
		bad("effects", "%v", err)
		return errs
	}
	expr := func(setting, src string) {
		if src == "" {
			return
		}
		if _, err := mapping.CompileExpr(setting, src); err != nil {
			bad(setting, "%s", reason(err))
		}
	}
	expr("event_id", r.EventID)
	expr("event_type", r.EventType)
	r.Paths.validate("paths", expr)
	for i, s := range r.States {
		if s == "" || slices.Index(r.States, s) != i {
			bad("states", "each state once, none empty: %q", r.States)
			break
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(r.Effects.Table)) {
		r.validateEffect("effects."+typ, typ, r.Effects.Table[typ], objects, bad, expr)
	}
	return errs
}

func (p EventPaths) validate(at string, expr func(setting, src string)) {
	expr(at+".object", p.Object)
	expr(at+".id", p.ID)
	expr(at+".key", p.Key)
	expr(at+".occurred_at", p.OccurredAt)
}

func (w Webhook) validateEffect(at, typ string, e Effect, objects map[string]Object, bad func(setting, format string, a ...any), expr func(setting, src string)) {
	if _, err := path.Match(typ, ""); err != nil || typ == "" {
		bad(at, "not an event type or a pattern such as contact.*")
	}
	kinds := e.Kinds()
	switch {
	case len(kinds) == 0:
		bad(at, "names no effect: give one of set_state, update_fields, keep_ours, mark_deleted, adopt or ignore")
		return
	case len(kinds) > 1:
		bad(at, "names %s: give one effect per event type", strings.Join(kinds, " and "))
		return
	}
	e.EventPaths.validate(at, expr)
	paths := e.EventPaths.WithDefaults(w.Paths)
	if kinds[0] != EffectIgnore && paths.ID == "" && paths.Key == "" {
		bad(at, "says nowhere where the event names its object: set id or key here or under paths")
	}
	switch kinds[0] {
	case EffectSetState:
		if !slices.Contains(w.States, e.SetState) {
			bad(at+".set_state", "%q is not one of the states (%s)", e.SetState, strings.Join(w.States, ", "))
		}
	case EffectUpdateFields:
		if _, err := CompileUpdate(e.UpdateFields); err != nil {
			bad(at+".update_fields", "%s", reason(err))
		}
	case EffectMarkDeleted:
		if e.MarkDeleted != DeletedLeave && e.MarkDeleted != DeletedRecreate {
			bad(at+".mark_deleted", "%q is not leave or recreate", e.MarkDeleted)
		}
	case EffectAdopt:
		if e.NewRecords != "" && paths.ID == "" {
			bad(at+".new_records", "a new record is known by the provider's id: set id here or under paths")
		}
		if t := strings.ReplaceAll(e.NewRecords, "{service}", ""); e.NewRecords != "" && (strings.ContainsAny(t, "{}") || strings.TrimSpace(t) == "") {
			bad(at+".new_records", "%q is not a local type ({service} may stand for the service's name)", e.NewRecords)
		}
		if _, routed := objects[e.NewRecords]; routed {
			bad(at+".new_records", "%s is routed to this service: its records are ours, not the provider's", e.NewRecords)
		}
	}
	if e.NewRecords != "" && !e.Adopt {
		bad(at+".new_records", "only an adopt effect makes new records")
	}
}

// Update is a compiled update_fields: each field's expression, or one for all.
type Update struct {
	Fields map[string]*mapping.Expr
	Whole  *mapping.Expr
}

// CompileUpdate compiles an update_fields body; errors name the field.
func CompileUpdate(b Body) (Update, error) {
	if b.Expr != "" {
		e, err := mapping.CompileExpr("update_fields", b.Expr)
		return Update{Whole: e}, err
	}
	u := Update{Fields: map[string]*mapping.Expr{}}
	for _, f := range slices.Sorted(maps.Keys(b.Fields)) {
		if f == "" || strings.Contains(f, ".") {
			return u, &mapping.Error{Target: "update_fields." + f, Reason: "a field of the record, by its top-level name"}
		}
		e, err := mapping.CompileExpr("update_fields."+f, b.Fields[f])
		if err != nil {
			return u, err
		}
		u.Fields[f] = e
	}
	return u, nil
}

// reason is a mapping error's reason alone: the setting is named already.
func reason(err error) string {
	if me, ok := err.(*mapping.Error); ok {
		return me.Reason
	}
	return err.Error()
}

func orList(ss []string) string {
	if len(ss) < 2 {
		return strings.Join(ss, "")
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " or " + ss[len(ss)-1]
}
