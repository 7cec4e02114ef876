package inbox

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/sync/config"
)

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
	}
	return "; the link's push is already queued"
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
	// Not while the link is being sent: its worker's outcome would be
	// dropped (its compare-and-set finds no processing link), and with it a
	// create's new id. Failing the effect rolls the event back and answers
	// 5xx: the provider delivers it again once the send has ended.
	marked, err := models.MarkRemoteDeleted(tx, link.ID, ev.Service, msg, now)
	switch {
	case err != nil:
		return "", err
	case !marked:
		return "", fmt.Errorf("link %d is being sent right now; deliver the deletion again once the send has ended", link.ID)
	}
	return "link marked: the remote object is gone", nil
}

// adoptUnknown creates a local record for an object we have never seen,
// keyed by (service, external id): the unique keys make a second delivery —
// or a replay — a no-op, never a second record.
func adoptUnknown(kind string) Effect {
	return func(ctx context.Context, tx *gorm.DB, ev Event, now time.Time) (string, error) {
		obj := object(ev)
		id, err := objectID(obj, "id")
		if err != nil {
			return "", err
		}
		if id == "" {
			return "", unprocessable("the %s has no id", kind)
		}
		body, hash, err := canonical(obj)
		if err != nil {
			return "", unprocessable("the %s is not a JSON object", kind)
		}
		typ := ev.Service + "_" + kind
		created, err := models.AdoptRemoteObject(tx, typ, id, ev.Service, body, hash, now)
		if err != nil {
			return "", err
		}
		if !created {
			return fmt.Sprintf("%s/%s already exists", typ, id), errIgnored
		}
		return fmt.Sprintf("created %s/%s", typ, id), nil
	}
}
