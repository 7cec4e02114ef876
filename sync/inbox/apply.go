package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/redact"
)

// receive answers a verified delivery's events: from one read, without a
// write, when all are stored already; else all through one transaction,
// as ever. (Writing only the new ones would take their keys and their
// effects' rows in another order than a concurrent delivery of the same
// list does, and Postgres would meet deadlocks.)
func (r *Receiver) receive(ctx context.Context, hk *hook, events []Event, batch bool, payloads []string, reds []*redact.Redactor, now time.Time) (Answer, error) {
	answer := Answer{Events: make([]Result, len(events)), batch: batch}
	known, err := r.storedOutcomes(ctx, events)
	if err != nil {
		return answer, err
	}
	if allStored(events, known) {
		for i, in := range events {
			answer.Events[i] = Result{EventID: in.ID, Duplicate: true, Outcome: known[in.ID]}
			r.countDuplicate(in.Service, in.ID, now)
		}
		return answer, nil
	}
	err = r.write(ctx, func(tx *gorm.DB) error {
		for i, in := range events {
			var err error
			if answer.Events[i], err = r.apply(ctx, tx, hk, in, payloads[i], reds[i], now); err != nil {
				return err
			}
		}
		return nil
	})
	return answer, err
}

// allStored reports whether every event is in known.
func allStored(events []Event, known map[string]string) bool {
	for _, in := range events {
		if _, ok := known[in.ID]; !ok {
			return false
		}
	}
	return true
}

// storedOutcomes reads the first outcome of each of the events that is
// already stored, by id, outside any transaction and any writer's turn.
func (r *Receiver) storedOutcomes(ctx context.Context, events []Event) (map[string]string, error) {
	ids := make([]string, len(events))
	for i, in := range events {
		ids[i] = in.ID
	}
	return models.EventOutcomes(r.db.WithContext(ctx), events[0].Service, ids)
}

// write runs fn in a transaction: on SQLite in the next group commit, on
// Postgres in its own (Postgres already shares its WAL flushes among
// concurrent commits).
func (r *Receiver) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if r.group != nil {
		return r.group.run(ctx, fn)
	}
	return r.db.WithContext(ctx).Transaction(fn)
}

// apply records the event and, when it is new, runs its effect; a
// duplicate only counts. Both in the caller's transaction; payload is the
// redacted body. An event with no effect is stored with its outcome in its
// insert.
func (r *Receiver) apply(ctx context.Context, tx *gorm.DB, hk *hook, in Event, payload string, red *redact.Redactor, now time.Time) (Result, error) {
	row := models.ProcessedEvent{Provider: in.Service, EventID: in.ID, EventType: in.Type, ReceivedAt: now, Payload: payload}
	fx, ok := hk.effectFor(in.Type)
	if !ok {
		note := noEffect(in.Type)
		row.Outcome, row.Error = models.EventIgnored, red.Text(note)
		return r.insert(tx, row, note, now)
	}
	return r.applyHeld(ctx, tx, fx, row, in, red, now)
}

// insert stores an event whose outcome is known, or counts it as a
// duplicate when it is stored already.
func (r *Receiver) insert(tx *gorm.DB, row models.ProcessedEvent, note string, now time.Time) (Result, error) {
	inserted, err := models.RecordEvent(tx, row)
	if err != nil || !inserted {
		return r.duplicateInTx(tx, row.Provider, row.EventID, now, err)
	}
	return Result{EventID: row.EventID, Outcome: row.Outcome, Note: note}, nil
}

// applyHeld holds the event (models.HoldEvent), so that no other delivery
// can apply it until this transaction ends, runs the effect and stores the
// event with its outcome in one insert. On SQLite the group commit's
// transaction holds the database's write lock (BEGIN IMMEDIATE), which does
// that; on Postgres a lock on the event's id does. A list's events are held
// in the list's order, as they were inserted when the insert came first.
// The insert stays insert-or-ignore, the guard should that ever not hold
// (an instance of an earlier version, which inserted first and wrote the
// outcome after, delivering the same event at once): the delivery then
// fails, its effect is rolled back with it, and the provider's re-send is a
// duplicate.
func (r *Receiver) applyHeld(ctx context.Context, tx *gorm.DB, fx Effect, row models.ProcessedEvent, in Event, red *redact.Redactor, now time.Time) (Result, error) {
	first, stored, err := models.HoldEvent(tx, in.Service, in.ID)
	if err != nil {
		return Result{EventID: in.ID}, err
	}
	if stored { // an earlier delivery of this group, or a raced one: counted here, answered with its outcome
		return Result{EventID: in.ID, Duplicate: true, Outcome: first}, models.CountDuplicate(tx, in.Service, in.ID, now)
	}
	ftx, found := withEventLink(tx) // h-recon: which link the effect found (event_link.go)
	note, err := fx(ctx, ftx, in, now)
	outcome, note, err := outcomeOf(in, note, err)
	if err != nil {
		return Result{EventID: in.ID}, err
	}
	row.Outcome, row.Error, row.LinkID = outcome, red.Text(note), found.id
	inserted, err := models.RecordEvent(tx, row)
	if err == nil && !inserted {
		err = fmt.Errorf("event %s/%s was stored while its effect ran", in.Service, in.ID)
	}
	return Result{EventID: in.ID, Outcome: outcome, Note: note}, err
}

// duplicateInTx answers a delivery that met its event stored inside the
// transaction (it raced the first, or the first came earlier in the same
// delivery or group): counted there, answered with the first's outcome.
// err is the caller's, passed through.
func (r *Receiver) duplicateInTx(tx *gorm.DB, provider, eventID string, now time.Time, err error) (Result, error) {
	res := Result{EventID: eventID, Duplicate: true}
	if err != nil {
		return res, err
	}
	if err := models.CountDuplicate(tx, provider, eventID, now); err != nil {
		return res, err
	}
	first, err := models.EventByID(tx, provider, eventID)
	if err == nil {
		res.Outcome = first.Outcome
	}
	return res, err
}

// effect runs the event's effect and names the outcome.
func (r *Receiver) effect(ctx context.Context, tx *gorm.DB, hk *hook, in Event, now time.Time) (string, string, error) {
	fx, ok := hk.effectFor(in.Type)
	if !ok {
		return models.EventIgnored, noEffect(in.Type), nil
	}
	note, err := fx(ctx, tx, in, now)
	return outcomeOf(in, note, err)
}

// outcomeOf names the outcome of an effect that returned note and err.
func outcomeOf(in Event, note string, err error) (string, string, error) {
	var un *UnprocessableError
	switch {
	case errors.Is(err, errIgnored):
		return models.EventIgnored, note, nil
	case errors.As(err, &un):
		return models.EventFailed, un.Reason, nil
	case err != nil:
		return "", "", fmt.Errorf("apply %s %s: %w", in.Type, in.ID, err)
	}
	return models.EventApplied, note, nil
}

// noEffect is the note of an event whose type has no effect.
func noEffect(eventType string) string { return "no effect for events of type " + quoteType(eventType) }
