package inbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
)

// keepOurs compares the provider's object with our desired state and queues
// a push of ours when they differ: the provider is not the source of these
// fields (the demo CRM's deal.updated).
// It compares what reconciliation's field_mismatch compares, and only where
// the deal carries the field: each of our pushes comes back as a
// deal.updated, and a field the CRM does not keep (most drop properties
// they do not know) would otherwise answer every push with another, without
// end. A link not in success is left as it is: its push is on its way, or a
// person decides, and restarting it here would reset its attempts.
func keepOurs(s subject, svc config.Service) Effect {
	return func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
		obj, err := s.objectOf(ev)
		if err != nil {
			return "", err
		}
		id, key, err := s.ids(ev)
		if err != nil {
			return "", err
		}
		lr, note, err := linkedRecord(tx, ev.Service, id, key)
		if err != nil {
			return note, err
		}
		link, rec := lr.Link, lr.Record
		if link.RemoteDeletedAt != nil {
			return "the deal was deleted earlier; waiting for an operator", errIgnored
		}
		desired, err := decodeObject(rec.Payload)
		if err != nil {
			return "", err
		}
		differ, absent := differences(svc.Objects[link.LocalType].ComparedFields(svc.Reconcile.Compare[link.LocalType], desired), desired, obj)
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
		return what + ": a push is queued" + aside, models.RequeueSyncedLink(tx, link.ID, now)
	}
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
	case models.StatusProcessing:
		return "; the link is being pushed"
	case models.StatusDeleted:
		return "; the record was deleted here, so nothing is pushed"
	}
	return "; the link's push is already queued"
}

// markDeleted marks the link: the object is gone. Re-creating it is an
// operator's decision unless the webhook says recreate: then a new create
// (with a new idempotency key, so the old object is not replayed) is
// queued at once.
func markDeleted(s subject, recreate bool) Effect {
	return func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
		id, key, err := s.ids(ev)
		if err != nil {
			return "", err
		}
		link, note, err := linkOf(tx, ev.Service, id, key)
		if err != nil {
			return note, err
		}
		if link.RemoteDeletedAt != nil {
			return "already marked deleted", errIgnored
		}
		if link.Status == models.StatusDeleted {
			// Our own delete, most likely, come back as an event: the link
			// already says the object is gone, and nothing is to re-create.
			return "the record was deleted here, and the link already says its object is gone", errIgnored
		}
		return deleted(tx, ev, link, cmp.Or(link.ExternalID, id), recreate, now)
	}
}

// deleted marks the link's object, gone ("" when the event named no id),
// deleted, and the link re-created when recreate says so.
func deleted(tx *gorm.DB, ev Event, link *models.Link, gone string, recreate bool, now time.Time) (string, error) {
	msg := fmt.Sprintf("%s reports %s deleted (event %s). Re-create it from the link page once you have confirmed it should exist.",
		ev.Service, cmp.Or(gone, link.ExternalKey), ev.ID)
	// Not while the link is being sent: its worker's outcome would be
	// dropped (its compare-and-set finds no processing link), and with it a
	// create's new id. Failing the effect rolls the event back and answers
	// 5xx: the provider delivers it again once the send has ended.
	marked, err := models.MarkRemoteDeleted(tx, link.ID, ev.Service, gone, msg, now)
	switch {
	case err != nil:
		return "", err
	case !marked:
		return "", fmt.Errorf("link %d is being sent right now; deliver the deletion again once the send has ended", link.ID)
	}
	if !recreate {
		return "link marked: the remote object is gone", nil
	}
	if _, err := models.Recreate(tx, link.ID, now); err != nil {
		return "", err
	}
	return "link marked: the remote object is gone, and a new one is being created, as the webhook's effects say", nil
}

// adopt links the event's object to the link that carries its key but not
// its id (a create whose answer was lost), so that the next push is an
// update of that object, not a second create. With newRecords, an object
// that no link knows becomes a new local record of that type, keyed by
// (service, the provider's id): the unique keys make a second delivery — or
// a replay — a no-op, never a second record.
func adopt(s subject, newRecords string) Effect {
	return func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
		id, key, err := s.ids(ev)
		if err != nil {
			return "", err
		}
		link, note, err := linkOf(tx, ev.Service, id, key)
		switch {
		case errors.Is(err, errIgnored) && link == nil && newRecords != "" && strings.HasPrefix(note, "no local record"):
			return adoptAsRecord(tx, s, ev, id, strings.ReplaceAll(newRecords, "{service}", ev.Service), now)
		case err != nil:
			return note, err
		case link.ExternalID != "":
			return fmt.Sprintf("%s/%s is already linked to %s", link.LocalType, link.LocalID, link.ExternalID), errIgnored
		case id == "":
			return "", unprocessable("the event names our key %s but not the provider's id: there is nothing to link", key)
		}
		// What the provider holds is unknown: its hash is none, so the
		// record is pushed over it as an update.
		if err := models.AdoptProviderState(tx, link, id, "", "-", now); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s/%s is now linked to %s; our record is pushed to it as an update", link.LocalType, link.LocalID, id), nil
	}
}

func adoptAsRecord(tx *gorm.DB, s subject, ev Event, id, typ string, now time.Time) (string, error) {
	if id == "" {
		return "", unprocessable("the object has no id: a new record is known by it")
	}
	obj, err := s.objectOf(ev)
	if err != nil {
		return "", err
	}
	if ev.Redacted && holdsMask(obj) {
		if _, err := models.RecordByKey(tx, typ, id); err == nil {
			return fmt.Sprintf("%s/%s already exists", typ, id), errIgnored
		}
		return "", unprocessable("the stored copy of this event masks some of the object's values (personal data and secrets are not kept), so a replay cannot make a record of it; the provider's next event about it will")
	}
	body, hash, err := canonical(obj)
	if err != nil {
		return "", unprocessable("the object cannot be stored as a record: %v", err)
	}
	created, err := models.AdoptRemoteObject(tx, typ, id, ev.Service, body, hash, now)
	if err != nil {
		return "", err
	}
	if !created {
		return fmt.Sprintf("%s/%s already exists", typ, id), errIgnored
	}
	return fmt.Sprintf("created %s/%s", typ, id), nil
}
