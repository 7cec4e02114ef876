package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/mapping"
)

// Effect applies one event inside the inbox's transaction and says what it
// did. Every effect is idempotent by design — a guarded transition, a push
// of the desired state, an upsert by key — so a replay is safe. It returns
// errIgnored when there was nothing to do, an *UnprocessableError when the
// event can never apply, and any other error to have the delivery retried.
type Effect func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error)

// errIgnored marks an event that needed nothing done.
var errIgnored = errors.New("ignored")

// UnprocessableError is a well-formed event that can never apply.
type UnprocessableError struct{ Reason string }

func (e *UnprocessableError) Error() string { return e.Reason }

func unprocessable(format string, a ...any) error {
	return &UnprocessableError{Reason: fmt.Sprintf(format, a...)}
}

// EffectSet returns the effects of a shipped table (payments, crm) for a
// service with the default settings, by event type.
func EffectSet(name string) map[string]Effect {
	w, err := config.Webhook{Effects: config.EffectSet(name)}.Resolved()
	if err != nil {
		return map[string]Effect{}
	}
	fx, err := compileEffects(w, config.Service{})
	if err != nil {
		return map[string]Effect{}
	}
	return fx
}

// compileEffects turns a resolved webhook's table into effects, keyed as
// the table is (event types and patterns). Configuration was validated at
// start, so an error here is a setting the validation missed.
func compileEffects(w config.Webhook, svc config.Service) (map[string]Effect, error) {
	out := map[string]Effect{}
	for _, typ := range slices.Sorted(maps.Keys(w.Effects.Table)) {
		e := w.Effects.Table[typ]
		s, err := compileSubject(e.EventPaths.WithDefaults(w.Paths))
		if err != nil {
			return nil, fmt.Errorf("effects.%s: %w", typ, err)
		}
		switch e.Kind() {
		case config.EffectSetState:
			out[typ] = setState(s, w.StateField, w.States, e.SetState)
		case config.EffectUpdateFields:
			u, err := config.CompileUpdate(e.UpdateFields)
			if err != nil {
				return nil, fmt.Errorf("effects.%s.update_fields: %w", typ, err)
			}
			out[typ] = updateFields(s, u)
		case config.EffectKeepOurs:
			out[typ] = keepOurs(s, svc)
		case config.EffectMarkDeleted:
			out[typ] = markDeleted(s, e.MarkDeleted == config.DeletedRecreate)
		case config.EffectAdopt:
			out[typ] = adopt(s, e.NewRecords)
		case config.EffectIgnore:
			out[typ] = func(context.Context, *gorm.DB, Event, time.Time) (string, error) {
				return "ignored, as the webhook's effects say for " + quoteType(typ), errIgnored
			}
		default:
			return nil, fmt.Errorf("effects.%s: names %d effects", typ, len(e.Kinds()))
		}
	}
	return out, nil
}

// subject is where an effect finds, in an event, the object it is about.
type subject struct {
	object, id, key, occurredAt *mapping.Expr
}

func compileSubject(p config.EventPaths) (subject, error) {
	var s subject
	var err error
	for _, c := range []struct {
		dst **mapping.Expr
		src string
	}{{&s.object, p.Object}, {&s.id, p.ID}, {&s.key, p.Key}, {&s.occurredAt, p.OccurredAt}} {
		if c.src == "" {
			continue
		}
		if *c.dst, err = mapping.CompileExpr(c.src, c.src); err != nil {
			return s, err
		}
	}
	return s, nil
}

// find evaluates one path on the event: "" when it finds nothing (or the
// path is not set), an *UnprocessableError when it fails on this event.
func find(e *mapping.Expr, ev Event) (any, error) {
	if e == nil {
		return nil, nil
	}
	v, _, err := e.Eval(ev.Doc)
	if err != nil {
		return nil, unprocessable("the path %s fails on this event: %v", e, err)
	}
	return v, nil
}

// ids finds the provider's id and our key of the event's object; an event
// in which neither path finds anything can never apply.
func (s subject) ids(ev Event) (id, key string, err error) {
	if id, err = s.text(s.id, ev, "id"); err != nil {
		return "", "", err
	}
	if key, err = s.text(s.key, ev, "key"); err != nil {
		return "", "", err
	}
	if id == "" && key == "" {
		return "", "", unprocessable("%s: the event names no object", s.nothingFound())
	}
	return id, key, nil
}

// nothingFound says which paths found nothing.
func (s subject) nothingFound() string {
	switch {
	case s.id != nil && s.key != nil:
		return fmt.Sprintf("neither the id path %s nor the key path %s finds anything in the event", s.id, s.key)
	case s.id != nil:
		return fmt.Sprintf("the id path %s finds nothing in the event", s.id)
	case s.key != nil:
		return fmt.Sprintf("the key path %s finds nothing in the event", s.key)
	}
	return "no id or key path is set"
}

// text finds an id or a key as text, refusing one no index can hold.
func (s subject) text(e *mapping.Expr, ev Event, what string) (string, error) {
	v, err := find(e, ev)
	if err != nil || v == nil {
		return "", err
	}
	switch v.(type) {
	case map[string]any, []any, bool:
		return "", unprocessable("the %s path %s finds %s, not an id", what, e, kindWord(v))
	}
	t := mapping.Text(v)
	if p := textProblem(t); p != "" {
		return "", unprocessable("the object's %s at %s %s", what, e, p)
	}
	if len(t) > maxObjectID {
		return "", unprocessable("the object's %s at %s is longer than %d bytes", what, e, maxObjectID)
	}
	return t, nil
}

// objectOf finds the event's object, which must be a JSON object.
func (s subject) objectOf(ev Event) (map[string]any, error) {
	v, err := find(s.object, ev)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, unprocessable("the object path %s finds %s in the event, not an object", s.object, kindWord(v))
	}
	return obj, nil
}

// occurred is when the event says its change happened, zero when it does
// not say: unix seconds or milliseconds (told apart by size), or RFC 3339.
func (s subject) occurred(ev Event) (time.Time, error) {
	v, err := find(s.occurredAt, ev)
	if err != nil || v == nil {
		return time.Time{}, err
	}
	if t, ok := v.(string); ok {
		if at, err := time.Parse(time.RFC3339Nano, t); err == nil {
			return at, nil
		}
	}
	var n float64
	if err := json.Unmarshal([]byte(mapping.Text(v)), &n); err != nil || n <= 0 {
		return time.Time{}, unprocessable("the time path %s finds %s, which is not a time", s.occurredAt, mapping.Text(v))
	}
	if n > 1e11 { // milliseconds: 1e11 seconds is the year 5138
		return time.UnixMilli(int64(n)).UTC(), nil
	}
	return time.Unix(int64(n), 0).UTC(), nil
}

func kindWord(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	}
	return "a number"
}

// setState moves a record forward along states to the state to, once: the
// guard makes a second "succeeded" for a paid payment a no-op. Providers do
// not promise delivery order, and re-send a delivery that got a 5xx later,
// so a refund can arrive before its payment: an event ahead of the record's
// state applies even over a step not yet seen (a refund implies the
// payment), and only one at or behind it is old news. Requiring the exact
// state before its own would ignore the early refund with a 2xx, and lose
// it for good. It also adopts the provider's id on a link that lost its
// create's response.
func setState(s subject, field string, states []string, to string) Effect {
	return func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
		id, key, err := s.ids(ev)
		if err != nil {
			return "", err
		}
		lr, note, err := linkedRecord(tx, ev.Service, id, key)
		if err != nil {
			return note, err
		}
		link, rec := lr.Link, lr.Record
		payload, err := decodeObject(rec.Payload)
		if err != nil {
			return "", err
		}
		from := str(payload, field)
		cur, next := slices.Index(states, from), slices.Index(states, to)
		switch {
		case cur < 0:
			return "", unprocessable("%s/%s has %s %q, which is none of %s: where %q stands against it is unknown, so nothing was changed",
				rec.LocalType, rec.LocalID, field, from, strings.Join(states, ", "), to)
		case cur == next:
			return fmt.Sprintf("%s/%s is already %q: nothing to do", rec.LocalType, rec.LocalID, from), errIgnored
		case cur > next:
			return fmt.Sprintf("%s/%s is already %q, which comes after %q: the event is older news, nothing to do",
				rec.LocalType, rec.LocalID, from, to), errIgnored
		}
		payload[field] = to
		hash, err := setPayload(tx, rec, payload, []string{field}, now, now)
		if err != nil {
			return "", err
		}
		// The link learns what the provider holds (so that only what it lacks
		// is pushed), and its id if it had none; the other services are owed
		// the record's new state.
		if err := models.RecordMovedByProvider(tx, lr, id, heldAfter(link.CreatePayload, field, to), hash, now); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s/%s went from %s to %s", rec.LocalType, rec.LocalID, from, to), nil
	}
}

// heldAfter is the hash of a frozen create body moved to the state to, or ""
// when no body was frozen: then nothing says what the provider holds, and
// the record is pushed over it.
func heldAfter(createPayload, field, to string) string {
	if createPayload == "" {
		return ""
	}
	body, err := decodeObject(createPayload)
	if err != nil {
		return ""
	}
	body[field] = to
	_, hash, err := canonical(body)
	if err != nil {
		return ""
	}
	return hash
}

// linkedRecord finds the link and the record an event's object belongs to.
// When there are none, or the link is another object's, it returns why with
// errIgnored.
//
// A link found by our key whose external id is not the event's is left
// alone: two objects can carry our key (a duplicate, which reconciliation
// reports for a person to resolve), and an event about the one we do not
// point at — a person deleting the stray duplicate — would otherwise mark
// the link of the one we keep deleted, and its Re-create make a third.
func linkedRecord(tx *gorm.DB, service, id, key string) (models.LinkedRecord, string, error) {
	lr, err := models.LinkedRecordByExternal(tx, service, id, key)
	if note, err := checkLink(tx, lr.Link, id, key, err); err != nil {
		return lr, note, err
	}
	if lr.Record == nil {
		return lr, fmt.Sprintf("the link of %s/%s has no record", lr.Link.LocalType, lr.Link.LocalID), errIgnored
	}
	return lr, "", nil
}

// linkOf is linkedRecord's link alone.
func linkOf(tx *gorm.DB, service, id, key string) (*models.Link, string, error) {
	link, err := models.LinkByExternal(tx, service, id, key)
	if note, err := checkLink(tx, link, id, key, err); err != nil {
		return nil, note, err
	}
	return link, "", nil
}

// checkLink says why an effect leaves the link it looked up by the event's
// id and key (err: how the lookup ended) alone: there is none, or it is
// another object's. Else it notes the link with the event.
//
// A link found by our key alone may have given up the event's object: the
// provider reported it deleted, or said it is not there (an update's 404, a
// reconciliation's listing), and the link was re-created as a new object
// (or is being). A late delivery or a replay about the old one, applied,
// would mark the new one deleted (and re-create it again), adopt the dead
// id, or write the dead object's fields over the record.
func checkLink(tx *gorm.DB, link *models.Link, id, key string, err error) (string, error) {
	if errors.Is(err, models.ErrNotFound) {
		return fmt.Sprintf("no local record is linked to %s", strings.Join(nonEmpty(id, key), " or ")), errIgnored
	} else if err != nil {
		return "", err
	}
	if id != "" && link.ExternalID != id {
		gone, err := models.DeletedObject(tx, link.ID, id)
		if err != nil {
			return "", err
		}
		if gone {
			noteEventLink(tx, link) // on the record's page, saying why it did nothing
			return givenUp(link, id), errIgnored
		}
	}
	if id != "" && link.ExternalID != "" && link.ExternalID != id {
		return fmt.Sprintf("%s carries our key %s, but the link of %s/%s points at %s: the event is about another object (a duplicate?), so the link is left alone",
			id, key, link.LocalType, link.LocalID, link.ExternalID), errIgnored
	}
	noteEventLink(tx, link) // h-recon: kept with the event (event_link.go)
	return "", nil
}

// givenUp says why an event about id, an object link gave up (its
// provider reported it deleted or missing), changes nothing.
func givenUp(link *models.Link, id string) string {
	about := fmt.Sprintf("about %s, which %s reported deleted or missing", id, link.ExternalService)
	record := link.LocalType + "/" + link.LocalID
	switch {
	case link.RemoteDeletedAt != nil:
		return fmt.Sprintf("%s; %s waits for a person to re-create its object: nothing to do", about, record)
	case link.ExternalID != "":
		return fmt.Sprintf("%s, and which was re-created as %s for %s: nothing to do", about, link.ExternalID, record)
	case link.Status == models.StatusDeleted:
		return fmt.Sprintf("%s; %s was deleted here since: nothing to do", about, record)
	}
	return fmt.Sprintf("%s, and which is being re-created for %s: nothing to do", about, record)
}

func nonEmpty(ss ...string) []string {
	return slices.DeleteFunc(ss, func(s string) bool { return s == "" })
}

func str(m map[string]any, k string) string {
	switch v := m[k].(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

// setPayload writes the record's new payload, in which the fields changed
// took their values at at, and returns its hash.
func setPayload(tx *gorm.DB, rec *models.Record, payload map[string]any, changed []string, at, now time.Time) (string, error) {
	body, hash, err := canonical(payload)
	var invalid *models.InvalidError
	if errors.As(err, &invalid) {
		// The event would make the record one it cannot hold (over the
		// payload limit): stored as failed and answered 2xx, for a person
		// to see. An error here would answer 5xx, and the provider send it
		// again, refused the same way each time, with the rest of its list.
		return "", unprocessable("the record cannot take this change: %s", invalid.Reason)
	}
	if err != nil {
		return "", err
	}
	return hash, models.SetRecordPayload(tx, rec, body, hash, changed, at, now)
}

// canonical is a payload as records store it, and its content hash.
func canonical(payload map[string]any) (string, string, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return "", "", err
	}
	return models.CanonicalPayload(raw)
}

func decodeObject(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("stored payload: %w", err)
	}
	return m, nil
}

// sameJSON compares two decoded JSON values by their encoding, so that the
// number 10 and 10.0 or a reordered object compare equal.
func sameJSON(a, b any) bool {
	norm := func(v any) string {
		raw, _ := json.Marshal(v)
		var x any
		_ = json.Unmarshal(raw, &x)
		out, _ := json.Marshal(x)
		return string(out)
	}
	return norm(a) == norm(b)
}
