package reconcile

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models/dbtest"
	"github.com/syncdesk/syncdesk/sync/connector"
)

// skippingLister lists like conn but leaves one object out, as an
// offset-paginated list does when an earlier object is deleted between two
// pages (or as a list that omits archived objects does).
type skippingLister struct {
	conn Lister
	skip string
}

func (s skippingLister) List(ctx context.Context, typ, cursor string) (connector.Page, connector.Call) {
	p, c := s.conn.List(ctx, typ, cursor)
	var kept []map[string]any
	for _, it := range p.Items {
		if it["external_key"] != s.skip {
			kept = append(kept, it)
		}
	}
	p.Items = kept
	return p, c
}

// An object the listing did not return, but that exists, is found by key
// and adopted when the missing_remote fix re-creates its link: one object,
// never two.
func TestAnObjectTheListingMissedIsAdoptedNotDoubled(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.seedOrders(1, 3)
		e.rec = e.reconciler(skippingLister{conn: e.conn, skip: key(2)}, Options{})
		d := e.reconcile(RunOptions{TriggeredBy: "scheduler"})
		require.EqualValues(t, 1, d.Run.Fixed, "the run took order 2's object for missing and re-queued it")
		e.settle()
		require.Equal(t, 1, e.crm.CountByKey(key(2)), "the object was there all along: adopt it, never create a second")
	})
}
