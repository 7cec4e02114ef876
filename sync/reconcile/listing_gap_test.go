package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
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

// roundLister returns the provider's first page, then pages of nothing whose
// cursors go round as next says: a provider that ignores the cursor sent,
// or whose cursors cycle.
type roundLister struct {
	conn Lister
	next map[string]string
}

func (l roundLister) List(ctx context.Context, typ, cursor string) (connector.Page, connector.Call) {
	if cursor == "" {
		p, c := l.conn.List(ctx, typ, "")
		p.NextCursor = l.next[""]
		return p, c
	}
	return connector.Page{NextCursor: l.next[cursor]}, connector.Call{Class: connector.OK}
}

// A listing whose cursor comes back (the provider ignored it, or its
// cursors cycle) did not see the whole provider: the run ends failed, as a
// listing that fails does, and fixes nothing. Taken for the end of the
// listing, every object not yet listed would look missing and be created
// again; a cycle would hold the run, and every later run of the service,
// for ever.
func TestAListingWhoseCursorComesBackFailsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		next map[string]string
	}{
		{"the cursor sent comes back", map[string]string{"": "p2", "p2": "p2"}},
		{"the cursors cycle", map[string]string{"": "p2", "p2": "p3", "p3": "p2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
				e := setup(t, db)
				e.seedOrders(1, 3)
				e.rec = e.reconciler(roundLister{conn: e.conn, next: tc.next}, Options{})
				run, err := e.rec.Run(context.Background(), "crm", RunOptions{TriggeredBy: "scheduler"})
				require.ErrorContains(t, err, `the cursor "p2" came back after 3 objects`)
				d := e.detail(run.ID)
				require.Equal(t, models.RunFailed, d.Run.Status)
				require.Contains(t, d.Run.Error, "came back")
				require.Zero(t, d.Run.Fixed)
				require.Empty(t, totals(d), "nothing was taken for missing")
			})
		})
	}
}

// spentLister answers every listing as a provider whose allowance is spent
// does through a preset's answers: temporary, come back in an hour.
type spentLister struct{ calls *int }

func (l spentLister) List(context.Context, string, string) (connector.Page, connector.Call) {
	*l.calls++
	return connector.Page{}, connector.Call{Class: connector.Temporary, Quota: true, RetryAfter: time.Hour, HTTPCode: 403,
		Error: "HTTP 403: the org's API requests for the last 24 hours are used up; sent again in 1h0m0s (REQUEST_LIMIT_EXCEEDED: TotalRequests Limit exceeded.)"}
}

// A listing refused because the provider's allowance is spent ends the run
// at once, failed with the provider's words: its retries would otherwise
// wait an hour each, holding the service's runs, for a listing that cannot
// go before the allowance comes back.
func TestAListingRefusedForASpentAllowanceEndsTheRunAtOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := setup(t, db)
		e.seedOrders(1, 3)
		calls := 0
		e.rec = e.reconciler(spentLister{calls: &calls}, Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		run, err := e.rec.Run(ctx, "crm", RunOptions{TriggeredBy: "scheduler"})
		require.ErrorContains(t, err, "the org's API requests for the last 24 hours are used up")
		require.Equal(t, 1, calls, "asked once, not again within the hour")
		d := e.detail(run.ID)
		require.Equal(t, models.RunFailed, d.Run.Status)
		require.Zero(t, d.Run.Fixed)
	})
}
