package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
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

// EffectSet returns the effects of a named set (payments, crm, or none) for
// a service with the default settings.
func EffectSet(name string) map[string]Effect { return effectsOf(name, config.Service{}) }

// effectsOf returns the effects of a named set for the service svc, whose
// settings say, e.g., which fields a deal.updated compares.
func effectsOf(name string, svc config.Service) map[string]Effect {
	switch name {
	case "payments":
		return map[string]Effect{
			"payment.succeeded": transition("paid"),
			"payment.refunded":  transition("refunded"),
		}
	case "crm":
		return map[string]Effect{
			"deal.updated":    dealUpdated(svc),
			"deal.deleted":    dealDeleted,
			"contact.created": adoptUnknown("contact"),
		}
	}
	return map[string]Effect{}
}

// object is the event's subject: data.object (Stripe) or data (most others).
func object(ev Event) map[string]any {
	data, _ := ev.Body["data"].(map[string]any)
	if obj, ok := data["object"].(map[string]any); ok {
		return obj
	}
	return data
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

// paymentStates ranks a payment's states in the only order they happen: a
// payment is pending, then paid, then perhaps refunded.
var paymentStates = []string{"pending", "paid", "refunded"}

// transition moves a payment record forward to the state to, once: the
// guard makes a second "succeeded" for a paid payment a no-op. Providers do
// not promise delivery order, and re-send a delivery that got a 5xx later,
// so a refund can arrive before its payment: an event ahead of the record's
// state applies even over a step not yet seen (a refund implies the
// payment), and only one at or behind it is old news. Requiring the exact
// state before its own would ignore the early refund with a 2xx, and lose
// it for good. It also adopts the provider's id on a link that lost its
// create's response.
func transition(to string) Effect {
	return func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
		obj := object(ev)
		id, key := str(obj, "id"), str(obj, "external_key")
		if id == "" && key == "" {
			return "", unprocessable("the event names no payment: it has neither data.object.id nor data.object.external_key")
		}
		link, rec, note, err := linkedRecord(tx, ev.Service, obj)
		if err != nil {
			return note, err
		}
		payload, err := decodeObject(rec.Payload)
		if err != nil {
			return "", err
		}
		from := str(payload, "status")
		cur, next := slices.Index(paymentStates, from), slices.Index(paymentStates, to)
		switch {
		case cur < 0:
			return "", unprocessable("%s/%s has status %q, which is none of %s: where %q stands against it is unknown, so nothing was changed",
				rec.LocalType, rec.LocalID, from, strings.Join(paymentStates, ", "), to)
		case cur == next:
			return fmt.Sprintf("%s/%s is already %q: nothing to do", rec.LocalType, rec.LocalID, from), errIgnored
		case cur > next:
			return fmt.Sprintf("%s/%s is already %q, which comes after %q: the event is older news, nothing to do",
				rec.LocalType, rec.LocalID, from, to), errIgnored
		}
		payload["status"] = to
		hash, err := setPayload(tx, rec, payload, now)
		if err != nil {
			return "", err
		}
		// The link learns what the provider holds (so that only what it lacks
		// is pushed), and its id if it had none; the other services are owed
		// the record's new state.
		if err := models.AdoptProviderState(tx, link, id, heldAfter(link.CreatePayload, to), hash, now); err != nil {
			return "", err
		}
		if err := models.RequeueOtherLinks(tx, link.LocalType, link.LocalID, link.ExternalService, now); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s/%s went from %s to %s", rec.LocalType, rec.LocalID, from, to), nil
	}
}

// heldAfter is the hash of a frozen create body moved to the state to, or ""
// when no body was frozen: then nothing says what the provider holds, and
// the record is pushed over it.
func heldAfter(createPayload, to string) string {
	if createPayload == "" {
		return ""
	}
	body, err := decodeObject(createPayload)
	if err != nil {
		return ""
	}
	body["status"] = to
	_, hash, err := canonical(body)
	if err != nil {
		return ""
	}
	return hash
}

// linkedRecord finds the link and the record an event's object belongs to.
// When there are none, or the link is another object's, it returns why with
// errIgnored, and an *UnprocessableError when the object's id or key
// cannot be looked up (objectID).
//
// A link found by our key whose external id is not the event's is left
// alone: two objects can carry our key (a duplicate, which reconciliation
// reports for a person to resolve), and an event about the one we do not
// point at — a person deleting the stray duplicate — would otherwise mark
// the link of the one we keep deleted, and its Re-create make a third.
func linkedRecord(tx *gorm.DB, service string, obj map[string]any) (*models.Link, *models.Record, string, error) {
	id, err := objectID(obj, "id")
	if err != nil {
		return nil, nil, "", err
	}
	key, err := objectID(obj, "external_key")
	if err != nil {
		return nil, nil, "", err
	}
	link, err := models.LinkByExternal(tx, service, id, key)
	if errors.Is(err, models.ErrNotFound) {
		return nil, nil, fmt.Sprintf("no local record is linked to %s", strings.Join(nonEmpty(id, key), " or ")), errIgnored
	} else if err != nil {
		return nil, nil, "", err
	}
	if id != "" && link.ExternalID != "" && link.ExternalID != id {
		return nil, nil, fmt.Sprintf("%s carries our key %s, but the link of %s/%s points at %s: the event is about another object (a duplicate?), so the link is left alone",
			id, key, link.LocalType, link.LocalID, link.ExternalID), errIgnored
	}
	rec, err := models.LockRecord(tx, link.LocalType, link.LocalID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, nil, fmt.Sprintf("the link of %s/%s has no record", link.LocalType, link.LocalID), errIgnored
	} else if err != nil {
		return nil, nil, "", err
	}
	return link, rec, "", nil
}

func nonEmpty(ss ...string) []string {
	return slices.DeleteFunc(ss, func(s string) bool { return s == "" })
}

func setPayload(tx *gorm.DB, rec *models.Record, payload map[string]any, now time.Time) (string, error) {
	body, hash, err := canonical(payload)
	if err != nil {
		return "", err
	}
	return hash, models.SetRecordPayload(tx, rec, body, hash, now)
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
