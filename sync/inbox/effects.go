package inbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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
		if err := adoptID(tx, link, id, to, hash, now); err != nil {
			return "", err
		}
		if err := requeueOthers(tx, link, now); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s/%s went from %s to %s", rec.LocalType, rec.LocalID, from, to), nil
	}
}

// adoptID gives a link the provider's id when it had none (its create's
// answer was lost), and records the hash of what the provider holds, so that
// a state it holds is not pushed back for nothing and one it lacks is. A
// link being sent is left to its worker.
func adoptID(tx *gorm.DB, l *models.Link, id, to, hash string, now time.Time) error {
	updates := map[string]any{"updated_at": now}
	switch {
	case l.ExternalID == "" && id != "":
		// The provider holds the create's body, frozen at its first attempt,
		// in the event's state — not the record, which may have changed while
		// the link waited to retry: such a change is pushed now, as an update.
		held := heldAfter(l.CreatePayload, to)
		updates["external_id"], updates["needs_lookup"], updates["create_payload"] = id, false, ""
		updates["pushed_hash"], updates["last_error"], updates["attempts"] = held, "", 0
		updates["status"], updates["next_attempt_at"] = models.StatusNew, now
		if held == hash {
			updates["status"] = models.StatusSuccess
		}
	case l.Status == models.StatusSuccess:
		// It held the record's previous state, and moved it as we did.
		updates["pushed_hash"] = hash
	}
	return tx.Model(&models.Link{}).Where("id = ? AND status <> ?", l.ID, models.StatusProcessing).Updates(updates).Error
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

// requeueOthers queues a push of the record's new state to every other
// service it is linked to: the record changed, so their desired state did.
func requeueOthers(tx *gorm.DB, l *models.Link, now time.Time) error {
	return tx.Model(&models.Link{}).Where("local_type = ? AND local_id = ? AND external_service <> ? AND status IN ?",
		l.LocalType, l.LocalID, l.ExternalService, []models.Status{models.StatusSuccess, models.StatusFailed}).
		Updates(map[string]any{"status": models.StatusNew, "next_attempt_at": now, "attempts": 0, "updated_at": now}).Error
}

// dealUpdated compares the CRM's deal with our desired state and queues a
// push of ours when they differ: the CRM is not the source of these fields.
// It compares what reconciliation's field_mismatch compares, and only where
// the deal carries the field: each of our pushes comes back as a
// deal.updated, and a field the CRM does not keep (most drop properties
// they do not know) would otherwise answer every push with another, without
// end. A link not in success is left as it is: its push is on its way, or a
// person decides, and restarting it here would reset its attempts.
func dealUpdated(svc config.Service) Effect {
	return func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
		obj := object(ev)
		link, rec, note, err := linkedRecord(tx, ev.Service, obj)
		if err != nil {
			return note, err
		}
		if link.RemoteDeletedAt != nil {
			return "the deal was deleted earlier; waiting for an operator", errIgnored
		}
		desired, err := decodeObject(rec.Payload)
		if err != nil {
			return "", err
		}
		differ, absent := differences(comparedFields(svc, link.LocalType, desired), desired, obj)
		aside := ""
		if len(absent) > 0 {
			aside = fmt.Sprintf(" (the deal does not carry %s: not compared)", strings.Join(absent, ", "))
		}
		if len(differ) == 0 {
			return "the CRM matches our desired state" + aside, errIgnored
		}
		what := "the CRM differs from our desired state in " + strings.Join(differ, ", ")
		if link.Status != models.StatusSuccess {
			return what + leftAsIs(link) + aside, errIgnored
		}
		err = tx.Model(&models.Link{}).Where("id = ? AND status = ?", link.ID, models.StatusSuccess).
			Updates(map[string]any{"status": models.StatusNew, "next_attempt_at": now, "updated_at": now}).Error
		return what + ": a push is queued" + aside, err
	}
}

// comparedFields names the fields of a local type that a deal.updated
// compares, as sync/reconcile's diffFields does: those the service's
// reconcile.compare lists for the type, else the payload's top-level fields
// but our key and the provider's id, which the outbox sets itself.
func comparedFields(svc config.Service, localType string, desired map[string]any) []string {
	if fields := svc.Reconcile.Compare[localType]; fields != nil {
		return fields
	}
	o := svc.Objects[localType]
	key, id := cmp.Or(o.KeyField, "external_key"), cmp.Or(o.IDField, "id")
	var fields []string
	for f := range desired {
		if f != key && f != id {
			fields = append(fields, f)
		}
	}
	return fields
}

// differences sorts the compared fields the deal holds otherwise than we
// want into differ, and those it does not carry at all into absent. A field
// our payload lacks is not compared: a push would not set it either.
func differences(fields []string, want, got map[string]any) (differ, absent []string) {
	for _, f := range fields {
		w, ours := want[f]
		g, theirs := got[f]
		switch {
		case !ours:
		case !theirs:
			absent = append(absent, f)
		case !sameJSON(w, g):
			differ = append(differ, f)
		}
	}
	sort.Strings(differ)
	sort.Strings(absent)
	return differ, absent
}

// leftAsIs says why a link not in success is not queued again.
func leftAsIs(l *models.Link) string {
	switch l.Status {
	case models.StatusFailed:
		// As reconciliation does: a failure may be permanent, and the failed
		// list is where a person retries it, with fresh attempts.
		return "; the link failed, so a person retries it from the failed list"
	case models.StatusRetry:
		return fmt.Sprintf("; the link's push is already scheduled (attempt %d, due %s), and keeps its attempts",
			l.Attempts+1, l.NextAttemptAt.UTC().Format(time.RFC3339))
	}
	return "; the link's push is already " + string(l.Status)
}

// dealDeleted marks the link: the object is gone, and re-creating it is an
// operator's decision, never automatic.
func dealDeleted(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
	obj := object(ev)
	link, _, note, err := linkedRecord(tx, ev.Service, obj)
	if err != nil {
		return note, err
	}
	if link.RemoteDeletedAt != nil {
		return "already marked deleted", errIgnored
	}
	gone := cmp.Or(link.ExternalID, str(obj, "id"), link.ExternalKey)
	msg := fmt.Sprintf("%s reports %s deleted (event %s). Re-create it from the link page once you have confirmed it should exist.",
		ev.Service, gone, ev.ID)
	err = tx.Model(&models.Link{}).Where("id = ?", link.ID).Updates(map[string]any{"remote_deleted_at": now,
		"status": models.StatusFailed, "last_error": msg, "last_http_code": 0, "updated_at": now,
		"error_group": models.ErrorGroup(ev.Service, 0, "deleted remotely: re-create after confirming")}).Error
	return "link marked: the remote object is gone", err
}

// adoptUnknown creates a local record for an object we have never seen,
// keyed by (service, external id): the unique keys make a second delivery —
// or a replay — a no-op, never a second record.
func adoptUnknown(kind string) Effect {
	return func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
		obj := object(ev)
		id := str(obj, "id")
		if id == "" {
			return "", unprocessable("the %s has no id", kind)
		}
		raw, _ := json.Marshal(obj)
		canonical, hash, err := models.CanonicalPayload(raw)
		if err != nil {
			return "", unprocessable("the %s is not a JSON object", kind)
		}
		typ := ev.Service + "_" + kind
		rec := models.Record{LocalType: typ, LocalID: id, Payload: canonical, ContentHash: hash, CreatedAt: now, UpdatedAt: now}
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rec)
		if res.Error != nil {
			return "", res.Error
		}
		link := models.Link{LocalType: typ, LocalID: id, ExternalService: ev.Service, ExternalKey: id, ExternalID: id,
			Status: models.StatusSuccess, NextAttemptAt: now, PushedHash: hash, CreatedAt: now, UpdatedAt: now}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&link).Error; err != nil {
			return "", err
		}
		if res.RowsAffected == 0 {
			return fmt.Sprintf("%s/%s already exists", typ, id), errIgnored
		}
		return fmt.Sprintf("created %s/%s", typ, id), nil
	}
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
func linkedRecord(tx *gorm.DB, service string, obj map[string]any) (*models.Link, *models.Record, string, error) {
	id, key := str(obj, "id"), str(obj, "external_key")
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
