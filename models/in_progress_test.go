package models_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
	"github.com/syncdesk/syncdesk/models/dbtest"
)

// queueOrders stores orders 1..n, each with one crm link due at now.
func queueOrders(t *testing.T, db *gorm.DB, n int, now time.Time) []models.Link {
	t.Helper()
	for i := 1; i <= n; i++ {
		id := fmt.Sprint(i)
		v, h, _ := models.CanonicalPayload([]byte(`{"n":` + id + `}`))
		_, err := models.UpsertRecord(db, "order", id, v, h, now)
		require.NoError(t, err)
		require.NoError(t, models.EnsureLinks(db, "order", id, []models.LinkSpec{{Service: "crm", ExternalKey: "k" + id, IdempotencyKey: "i" + id}}, now))
	}
	var links []models.Link
	require.NoError(t, db.Order("id").Find(&links).Error)
	return links
}

// succeeded is the outcome of a successful push of each claimed link, as
// the engine writes it: a request the claim saw is answered.
func succeeded(claimed []models.ClaimedLink, now time.Time) []models.LinkOutcome {
	out := make([]models.LinkOutcome, len(claimed))
	for i, c := range claimed {
		out[i] = models.LinkOutcome{Link: c.Link, Status: models.StatusSuccess, ExternalID: "d" + c.LocalID,
			PushedHash: c.ContentHash, NextAttempt: now, Requested: c.Requested}
	}
	return out
}

func inProgressRows(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.Model(&models.InProgress{}).Count(&n).Error)
	return n
}

// A claim marks its links in progress by their lease alone: no row is
// written on the engine's hot path. The pages still show the sync under way,
// and a Sync now of a link being sent is refused as before.
func TestAClaimWritesNoInProgressRowYetShowsTheSyncUnderWay(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		links := queueOrders(t, db, 2, now)
		claimed, err := models.ClaimDue(db, "w/1", now, time.Minute, 1, nil)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.False(t, claimed[0].Requested)
		require.Zero(t, inProgressRows(t, db), "the claim wrote an in_progress row")

		rows, n, err := models.InProgressRows(db, now.Add(time.Second), 8)
		require.NoError(t, err)
		require.EqualValues(t, 1, n.Live)
		require.Zero(t, n.Held)
		require.Len(t, rows, 1)
		require.Equal(t, claimed[0].LocalID, rows[0].LocalID)
		require.Equal(t, models.SchedulerStarter, rows[0].StartedBy)
		require.True(t, rows[0].StartedAt.Equal(now), "started when claimed, got %v", rows[0].StartedAt)

		var fresh []models.Link
		require.NoError(t, db.Order("id").Find(&fresh).Error)
		byLink, err := models.InProgressOfLinks(db, fresh, now.Add(time.Second))
		require.NoError(t, err)
		require.Len(t, byLink, 1)
		require.Equal(t, models.SchedulerStarter, byLink[claimed[0].ID].StartedBy)

		_, err = models.RequestSync(db, claimed[0].ID, "ana", now.Add(time.Second), time.Minute, "")
		var busy *models.InProgressError
		require.ErrorAs(t, err, &busy)
		require.Equal(t, models.SchedulerStarter, busy.Row.StartedBy)
		require.Zero(t, inProgressRows(t, db), "a refused request left a row")

		// Once the lease has run out, the link is no longer shown under way.
		rows, n, err = models.InProgressRows(db, now.Add(2*time.Minute), 8)
		require.NoError(t, err)
		require.Zero(t, n.Live)
		require.Empty(t, rows)
		require.NotEqual(t, claimed[0].ID, links[1].ID)
	})
}

// A Sync now request is answered by the claim that follows it: the pages
// show who asked while the link is sent, and the finish releases the request.
func TestASyncNowRequestIsReleasedByTheFinishOfItsSend(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		links := queueOrders(t, db, 2, now)
		// Both links go to success first, so that only the asked one is due.
		claimed, err := models.ClaimDue(db, "w/1", now, time.Minute, 10, nil)
		require.NoError(t, err)
		require.Len(t, claimed, 2)
		_, err = models.FinishLinks(db, succeeded(claimed, now), now)
		require.NoError(t, err)

		asked := now.Add(time.Second)
		_, err = models.RequestSync(db, links[0].ID, "ana", asked, time.Minute, "")
		require.NoError(t, err)
		require.EqualValues(t, 1, inProgressRows(t, db))
		rows, n, err := models.InProgressRows(db, asked, 8)
		require.NoError(t, err)
		require.Equal(t, models.InProgressCounts{Live: 1, Waiting: 1}, n, "asked for, not sent yet: it waits its turn")
		require.Equal(t, models.RequestHolder, rows[0].Holder)

		claimed, err = models.ClaimDue(db, "w/2", asked, time.Minute, 10, nil)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.True(t, claimed[0].Requested, "the claim must see the request it answers")

		rows, n, err = models.InProgressRows(db, asked, 8)
		require.NoError(t, err)
		require.Equal(t, models.InProgressCounts{Live: 1}, n, "one sync under way, not a request and a send")
		require.Equal(t, "ana", rows[0].StartedBy)
		require.Equal(t, "w/2", rows[0].Holder)
		_, err = models.RequestSync(db, links[0].ID, "bo", asked.Add(time.Second), time.Minute, "")
		var busy *models.InProgressError
		require.ErrorAs(t, err, &busy)
		require.Equal(t, "ana", busy.Row.StartedBy, "a second ask is told who asked for the send under way")

		_, err = models.FinishLinks(db, succeeded(claimed, asked), asked)
		require.NoError(t, err)
		require.Zero(t, inProgressRows(t, db), "the finish must release the request it answered")
		_, err = models.RequestSync(db, links[0].ID, "bo", asked.Add(time.Second), time.Minute, "")
		require.NoError(t, err, "a new request after the end is accepted")
	})
}

// Requests and claims race on the same links: every request is either
// answered by a claim (and released by its finish) or refused as already in
// progress; none is left behind, and no link is claimed twice at once.
func TestSyncNowRacingClaimsLeavesNoRequestBehind(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		links := queueOrders(t, db, 20, now)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var accepted, refused int
		var claims [][]models.ClaimedLink
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					c, err := models.ClaimDue(db, fmt.Sprintf("w/%d", i), now, time.Minute, 3, nil)
					if err != nil {
						t.Errorf("claim: %v", err)
					}
					mu.Lock()
					claims = append(claims, c)
					mu.Unlock()
					return
				}
				_, err := models.RequestSync(db, links[i%len(links)].ID, "ana", now, time.Minute, "")
				mu.Lock()
				defer mu.Unlock()
				var busy *models.InProgressError
				switch {
				case err == nil:
					accepted++
				case errors.As(err, &busy):
					refused++
				default:
					t.Errorf("request: %v", err)
				}
			}()
		}
		wg.Wait()
		seen := map[int64]bool{}
		var all []models.ClaimedLink
		for _, c := range claims {
			for _, l := range c {
				require.False(t, seen[l.ID], "link %d claimed twice", l.ID)
				seen[l.ID] = true
			}
			all = append(all, c...)
		}
		_, err := models.FinishLinks(db, succeeded(all, now), now)
		require.NoError(t, err)
		// What is still asked for is claimed and finished in turn.
		for {
			c, err := models.ClaimDue(db, "w/last", now, time.Minute, 100, nil)
			require.NoError(t, err)
			if len(c) == 0 {
				break
			}
			_, err = models.FinishLinks(db, succeeded(c, now), now)
			require.NoError(t, err)
		}
		require.Positive(t, accepted+refused)
		require.Zero(t, inProgressRows(t, db), "a request was left behind (%d accepted, %d refused)", accepted, refused)
	})
}

// On Postgres a claim can commit between a Sync now's read of the link and
// its update: the request, which the claim did not see, is refused as
// already in progress, and leaves no row behind for the finish to miss.
// (SQLite lets one writer in at a time, so it cannot interleave them.)
func TestASyncNowOvertakenByAClaimIsRefused(t *testing.T) {
	db := dbtest.Postgres(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	links := queueOrders(t, db, 1, now)
	claim := db.Begin() // claimed, not yet committed: the link row is locked
	claimed, err := models.ClaimDue(claim, "w/1", now, time.Minute, 1, nil)
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	asked := make(chan error, 1)
	go func() {
		_, err := models.RequestSync(db, links[0].ID, "ana", now, time.Minute, "")
		asked <- err
	}()
	// The request reads the link as new, writes its row and waits on the
	// link's lock, held by the claim.
	require.Eventually(t, func() bool {
		var waiting int64
		db.Raw(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting)
		return waiting > 0
	}, 10*time.Second, 10*time.Millisecond, "the request never waited for the claim")
	require.NoError(t, claim.Commit().Error)

	var busy *models.InProgressError
	require.ErrorAs(t, <-asked, &busy)
	require.Equal(t, models.SchedulerStarter, busy.Row.StartedBy)
	require.False(t, claimed[0].Requested)
	require.Zero(t, inProgressRows(t, db), "the request the claim never saw was left behind")
}

// A link whose worker's lease ran out is still its worker's until the
// rescuer hands it back: a late finish would end it with a send older than
// any request, so a Sync now is refused until then. A request made after the
// rescue is not released by that worker's late finish: the next send
// answers it.
func TestASyncNowIsAnsweredByASendClaimedAfterIt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		links := queueOrders(t, db, 1, now)
		_, err := models.RequestSync(db, links[0].ID, "ana", now, time.Minute, "")
		require.NoError(t, err)
		claimed, err := models.ClaimDue(db, "w/1", now, time.Minute, 10, nil)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.True(t, claimed[0].Requested)

		late := now.Add(2 * time.Minute) // the lease has run out; not rescued yet
		_, err = models.RequestSync(db, links[0].ID, "bo", late, time.Minute, "")
		var busy *models.InProgressError
		require.ErrorAs(t, err, &busy, "the link is still its worker's")
		require.Equal(t, "ana", busy.Row.StartedBy)

		expired, err := models.ExpiredLeases(db, late, 10)
		require.NoError(t, err)
		require.Len(t, expired, 1)
		released, err := models.ReleaseExpired(db, expired[0], models.Attempt{LinkID: links[0].ID, Operation: "deal.create",
			Outcome: models.OutcomeAmbiguous, Error: "worker stopped", CreatedAt: late}, late)
		require.NoError(t, err)
		require.True(t, released)
		_, err = models.RequestSync(db, links[0].ID, "bo", late, time.Minute, "")
		require.NoError(t, err, "handed back, the link takes a new request")

		stale, err := models.FinishLinks(db, succeeded(claimed, late), late) // w/1's late finish
		require.NoError(t, err)
		require.Equal(t, 1, stale)
		var rows []models.InProgress
		require.NoError(t, db.Find(&rows).Error)
		require.Len(t, rows, 1, "bo's request waits for the send that answers it")
		require.Equal(t, "bo", rows[0].StartedBy)

		claimed, err = models.ClaimDue(db, "w/2", late, time.Minute, 10, nil)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.True(t, claimed[0].Requested)
		_, err = models.FinishLinks(db, succeeded(claimed, late), late)
		require.NoError(t, err)
		require.Zero(t, inProgressRows(t, db))
	})
}

// A lease its worker renewed is its worker's again: a rescuer that listed
// it as expired just before does not hand it back. A worker renews nothing
// it lost: a link rescued or finished, or a lease that ran out, which a
// rescuer may be handing back.
func TestARenewedLeaseIsNotRescued(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		links := queueOrders(t, db, 3, now)
		claimed, err := models.ClaimDue(db, "w/1", now, time.Minute, 10, nil)
		require.NoError(t, err)
		require.Len(t, claimed, 3)

		// The rescuer's clock runs 20 s ahead of the worker's.
		rescuerNow, workerNow := now.Add(70*time.Second), now.Add(50*time.Second)
		expired, err := models.ExpiredLeases(db, rescuerNow, 10)
		require.NoError(t, err)
		require.Len(t, expired, 3)
		ids := []int64{links[0].ID, links[1].ID, links[2].ID}
		renewed, err := models.RenewLeases(db, "w/1", ids[:2], workerNow, workerNow.Add(time.Minute))
		require.NoError(t, err)
		require.ElementsMatch(t, ids[:2], renewed)

		for _, x := range expired {
			released, err := models.ReleaseExpired(db, x, models.Attempt{LinkID: x.ID, Operation: "lease.expired",
				Outcome: models.OutcomeAmbiguous, Error: "worker stopped", CreatedAt: rescuerNow}, rescuerNow)
			require.NoError(t, err)
			require.Equal(t, x.ID == ids[2], released, "link %d", x.ID)
		}
		var l models.Link
		require.NoError(t, db.First(&l, ids[0]).Error)
		require.Equal(t, models.StatusProcessing, l.Status)
		require.Equal(t, "w/1", l.LeaseOwner)
		require.WithinDuration(t, workerNow.Add(time.Minute), *l.LockedUntil, time.Millisecond)
		i := slices.IndexFunc(claimed, func(c models.ClaimedLink) bool { return c.ID == l.ID })
		require.True(t, l.UpdatedAt.Equal(claimed[i].UpdatedAt), "the claim's updated_at stays: it tells which requests the send answers")

		renewed, err = models.RenewLeases(db, "w/2", ids[:2], workerNow, workerNow.Add(2*time.Minute))
		require.NoError(t, err)
		require.Empty(t, renewed, "another worker's lease is not renewed")
		renewed, err = models.RenewLeases(db, "w/1", ids, workerNow, workerNow.Add(2*time.Minute))
		require.NoError(t, err)
		require.ElementsMatch(t, ids[:2], renewed, "the rescued link is not w/1's any more")
		later := workerNow.Add(3 * time.Minute)
		renewed, err = models.RenewLeases(db, "w/1", ids[:2], later, later.Add(time.Minute))
		require.NoError(t, err)
		require.Empty(t, renewed, "a lease that ran out is not renewed")
	})
}
