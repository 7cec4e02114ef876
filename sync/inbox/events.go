package inbox

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/syncdesk/syncdesk/sync/config"
	"github.com/syncdesk/syncdesk/sync/inbox/verify"
	"github.com/syncdesk/syncdesk/sync/mapping"
)

// Event is one verified event, decoded: a delivery carries one, or a list
// of them (HubSpot).
type Event struct {
	Service, ID, Type string
	// Raw is the event's own JSON, as sent: the whole body, or its
	// element of the list.
	Raw []byte
	// Doc is Raw decoded as the effects' expressions see it.
	Doc any
	// Redacted is set on an event read back from its stored copy, for a
	// replay: personal data and secrets in it are masks, not values.
	Redacted bool
}

// maxBatch bounds the events of one delivery; HubSpot sends at most 100.
const maxBatch = 1000

// split reads the events a verified delivery carries. A JSON object is one
// event, known by the id its scheme found (or by event_id, when set); a
// JSON list is a batch, each event known by event_id. Each event's type is
// read with event_type unless its scheme said it.
//
// The events come sorted by id, so that concurrent deliveries of
// overlapping batches take their locks in one order and wait for each
// other rather than deadlock.
func (hk *hook) split(service string, v verify.Event, body []byte) ([]Event, bool, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		ev := Event{Service: service, ID: v.ID, Type: v.Type, Raw: body}
		if err := hk.read(&ev, ev.ID == "" || hk.eventID != nil); err != nil {
			return nil, false, err
		}
		return []Event{ev}, false, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, true, errors.New("the body is not a JSON list of events")
	}
	switch {
	case len(list) == 0:
		return nil, true, errors.New("the list of events is empty")
	case len(list) > maxBatch:
		return nil, true, fmt.Errorf("the delivery carries %d events, more than %d", len(list), maxBatch)
	case hk.eventID == nil:
		return nil, true, errors.New("the delivery is a list of events, and the webhook's event_id does not say where each event's id sits")
	}
	events := make([]Event, len(list))
	for i, raw := range list {
		events[i] = Event{Service: service, Raw: raw}
		if err := hk.read(&events[i], true); err != nil {
			return nil, true, fmt.Errorf("event %d of %d: %w", i+1, len(list), err)
		}
	}
	slices.SortStableFunc(events, func(a, b Event) int { return cmp.Compare(a.ID, b.ID) })
	return events, true, nil
}

// read decodes one event and, where asked, finds its id; its type when
// the scheme gave none. It puts both in their stored form.
func (hk *hook) read(ev *Event, wantID bool) error {
	doc, err := mapping.Decode(ev.Raw)
	if _, isObject := doc.(map[string]any); err != nil || !isObject {
		return errors.New("the event is not a JSON object")
	}
	ev.Doc = doc
	if wantID && hk.eventID != nil {
		if ev.ID, err = hk.find(hk.eventID, doc, "id"); err != nil {
			return err
		}
	}
	if ev.ID == "" {
		return errors.New("the event has no id")
	}
	if ev.Type == "" {
		if ev.Type, err = hk.find(hk.eventType, doc, "type"); err != nil {
			return err
		}
	}
	return ev.storable()
}

// find reads an event's id or type with its expression.
func (hk *hook) find(e *mapping.Expr, doc any, what string) (string, error) {
	v, _, err := e.Eval(doc)
	if err != nil {
		return "", fmt.Errorf("the event's %s (%s): %v", what, e, err)
	}
	switch v.(type) {
	case map[string]any, []any, bool:
		return "", fmt.Errorf("the event's %s (%s) is %s, not text", what, e, kindWord(v))
	}
	return mapping.Text(v), nil
}

// stored rebuilds an event from its stored row, for a replay.
func stored(service, id, typ, payload string) (Event, error) {
	doc, err := mapping.Decode([]byte(payload))
	if _, isObject := doc.(map[string]any); err != nil || !isObject {
		return Event{}, errors.New("the body is not a JSON object")
	}
	return Event{Service: service, ID: id, Type: typ, Raw: []byte(payload), Doc: doc, Redacted: true}, nil
}

// effectFor is the effect for an event type: Handle's, else the table's
// exact entry, else its best pattern (config.FirstEntry).
func (hk *hook) effectFor(typ string) (Effect, bool) {
	if fx, ok := hk.handled[typ]; ok {
		return fx, true
	}
	// The entries' order is worked out once, at start: not per event.
	if key, ok := config.FirstEntry(hk.entries, typ); ok {
		fx, ok := hk.effects[key]
		return fx, ok
	}
	return nil, false
}
