package inbox

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/mapping"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// updateFields sets fields of the linked record to the values the event
// carries: the provider's desired state, never an increment, so a replay
// or a duplicate lands where the first did. Two guards keep the provider
// and us from chasing each other:
//
//   - an echo of our own push (the provider reporting the value we sent)
//     changes nothing and queues nothing: values are compared as text when
//     both are numbers or strings (HubSpot answers "19.90" for 19.9);
//   - the change of a field older than that field's last change (by the
//     event's occurred_at) is old news: the field's newer value is on its
//     way. The guard is per field (models.FieldTimes): HubSpot sends one
//     property per event, applied in any order, and a change of the phone
//     must not be lost behind a later change of the first name, nor behind
//     a local write that changed the email only.
//
// A change is written to the record, the provider's link learns that it
// holds it (nothing to push back), and every other service is owed it.
func updateFields(s subject, u config.Update) Effect {
	return func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
		values, err := updateValues(u, ev)
		if err != nil {
			return "", err
		}
		if masked := maskedFields(ev, values); len(masked) > 0 {
			return "", unprocessable("the stored copy of this event masks %s (personal data and secrets are not kept), so a replay cannot set it; the provider's next change will carry it",
				strings.Join(masked, ", "))
		}
		if len(values) == 0 {
			return "the event sets none of the fields the webhook's effects update", errIgnored
		}
		id, key, err := s.ids(ev)
		if err != nil {
			return "", err
		}
		at, err := s.occurred(ev)
		if err != nil {
			return "", err
		}
		lr, note, err := linkedRecord(tx, ev.Service, id, key)
		if err != nil {
			return note, err
		}
		link, rec := lr.Link, lr.Record
		if link.RemoteDeletedAt != nil {
			return "the object was deleted earlier; waiting for an operator", errIgnored
		}
		newer, err := dropOlderNews(values, rec, at)
		if err != nil {
			return "", err
		}
		if len(values) == 0 {
			return fmt.Sprintf("the change happened at %s, before the last change of %s in %s/%s: older news, nothing to do",
				at.UTC().Format(noteTime), listNewer(newer), rec.LocalType, rec.LocalID), errIgnored
		}
		payload, err := decodeObject(rec.Payload)
		if err != nil {
			return "", err
		}
		changed := setValues(payload, values)
		if len(changed) == 0 {
			return fmt.Sprintf("%s/%s already holds these values (our own push coming back?)%s: nothing to do",
				rec.LocalType, rec.LocalID, newerNote(newer, at)), errIgnored
		}
		when := now
		if !at.IsZero() && at.Before(now) {
			when = at // the fields' next changes from the provider are compared with this one's own time
		}
		hash, err := setPayload(tx, rec, payload, changed, when, now)
		if err != nil {
			return "", err
		}
		if err := models.RecordMovedByProvider(tx, lr, id, "", hash, now); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s/%s took %s from %s%s", rec.LocalType, rec.LocalID, strings.Join(changed, ", "), ev.Service,
			newerNote(newer, at)), nil
	}
}

// noteTime is how notes show a time: to the millisecond where it has one,
// as HubSpot's occurredAt does, so that two changes a few milliseconds
// apart do not read as one time.
const noteTime = "2006-01-02T15:04:05.999Z07:00"

// dropOlderNews takes out of values the fields that changed after at (an
// event without occurred_at is never older news), and returns them with
// when each did.
func dropOlderNews(values map[string]any, rec *models.Record, at time.Time) (map[string]time.Time, error) {
	if at.IsZero() {
		return nil, nil
	}
	times, err := rec.ChangeTimes()
	if err != nil {
		return nil, err
	}
	newer := map[string]time.Time{}
	for f := range values {
		if last := times.Of(f); at.Before(last) {
			newer[f] = last
			delete(values, f)
		}
	}
	return newer, nil
}

// listNewer names fields with the time each last changed:
// "email (2026-12-07T10:01:00Z), first_name (…)".
func listNewer(newer map[string]time.Time) string {
	parts := make([]string, 0, len(newer))
	for _, f := range slices.Sorted(maps.Keys(newer)) {
		parts = append(parts, fmt.Sprintf("%s (%s)", f, newer[f].UTC().Format(noteTime)))
	}
	return strings.Join(parts, ", ")
}

// newerNote is what a note adds about the fields the event's change left
// alone as older news, or "" when there are none.
func newerNote(newer map[string]time.Time, at time.Time) string {
	if len(newer) == 0 {
		return ""
	}
	return fmt.Sprintf("; older news for %s, changed after this change (%s)", listNewer(newer), at.UTC().Format(noteTime))
}

// setValues sets the values in payload, each keeping its field's type, and
// returns the fields whose values changed, in order.
func setValues(payload, values map[string]any) []string {
	var changed []string
	for _, f := range slices.Sorted(maps.Keys(values)) {
		v, had := payload[f]
		if had && sameValue(v, values[f]) {
			continue
		}
		payload[f] = keepType(v, values[f])
		changed = append(changed, f)
	}
	return changed
}

// updateValues evaluates the update on the event: field by field (a field
// whose expression finds nothing is left alone), or one expression whose
// object's members are the fields.
func updateValues(u config.Update, ev Event) (map[string]any, error) {
	out := map[string]any{}
	if u.Whole != nil {
		v, err := find(u.Whole, ev)
		if err != nil || v == nil {
			return out, err
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, unprocessable("update_fields %s yields %s, not an object of fields", u.Whole, kindWord(v))
		}
		for k, val := range obj {
			if k == "" || strings.Contains(k, ".") {
				return nil, unprocessable("update_fields %s yields the field %q: a field is a top-level name", u.Whole, k)
			}
			out[k] = val
		}
		return out, nil
	}
	for f, e := range u.Fields {
		v, ok, err := e.Eval(ev.Doc)
		if err != nil {
			return nil, unprocessable("update_fields.%s fails on this event: %v", f, err)
		}
		if ok {
			out[f] = v
		}
	}
	return out, nil
}

// maskedFields are the fields whose values, read from a replayed event's
// redacted copy, are masks: setting them would write "[email]" into the
// record.
func maskedFields(ev Event, values map[string]any) []string {
	if !ev.Redacted {
		return nil
	}
	var out []string
	for _, f := range slices.Sorted(maps.Keys(values)) {
		if holdsMask(values[f]) {
			out = append(out, f)
		}
	}
	return out
}

// holdsMask reports whether a value, at any depth, holds a redactor's mask.
func holdsMask(v any) bool {
	switch x := v.(type) {
	case string:
		return redact.HasMask(x)
	case map[string]any:
		for _, e := range x {
			if holdsMask(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsMask(e) {
				return true
			}
		}
	}
	return false
}

// sameValue compares a stored value with an event's: as text where both
// are scalars, so that the number 19.9 and the string "19.90" are one.
func sameValue(stored, got any) bool {
	a, aok := scalarText(stored)
	b, bok := scalarText(got)
	if !aok || !bok {
		return sameJSON(stored, got)
	}
	if a == b {
		return true
	}
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && x == y
}

func scalarText(v any) (string, bool) {
	switch v.(type) {
	case map[string]any, []any, nil, bool:
		return "", false
	}
	return mapping.Text(v), true
}

// keepType gives a new value the type the field had: providers that keep
// every property as a string (HubSpot) would otherwise turn our numbers
// into text.
func keepType(old, got any) any {
	text, isText := got.(string)
	if !isText {
		return got
	}
	if _, wasNumber := scalarText(old); wasNumber {
		if _, isString := old.(string); !isString {
			if f, err := strconv.ParseFloat(text, 64); err == nil {
				if i, err := strconv.ParseInt(text, 10, 64); err == nil {
					return i
				}
				return f
			}
		}
	}
	return got
}
