package inbox

import (
	"context"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// Added by h-recon (issue 14, "one record, one timeline"): the link an
// event's effect finds is kept with the event (processed_events.link_id),
// so that a record's page lists the webhooks about it by an index, without
// reading payloads. Effects find their link through linkOf alone; it notes
// the link in a holder that apply puts in the transaction's context, and
// apply writes it with the outcome.

type eventLinkKey struct{}

// eventLink holds the link an effect found, if any.
type eventLink struct{ id *int64 }

// withEventLink returns tx carrying a fresh holder, and the holder.
func withEventLink(tx *gorm.DB) (*gorm.DB, *eventLink) {
	h := &eventLink{}
	return tx.WithContext(context.WithValue(tx.Statement.Context, eventLinkKey{}, h)), h
}

// noteEventLink tells the holder in tx's context, if there is one, which
// link the effect found.
func noteEventLink(tx *gorm.DB, l *models.Link) {
	if h, ok := tx.Statement.Context.Value(eventLinkKey{}).(*eventLink); ok && l != nil {
		id := l.ID
		h.id = &id
	}
}
