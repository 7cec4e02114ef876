package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/syncdesk/syncdesk/models"
)

// SyncNow asks for one link to be sent now, on behalf of who. While another
// request or a send holds the link's in-progress row, it changes nothing and
// returns an *models.InProgressError saying since when and by whom.
func (e *Engine) SyncNow(ctx context.Context, linkID int64, who string) (*models.Link, error) {
	l, err := models.RequestSync(e.db.WithContext(ctx), linkID, who, e.clock.Now(), e.opts.Hold, traceParent(ctx))
	if err == nil {
		e.poke()
	}
	return l, err
}

// Rescue returns links whose worker's lease expired (the worker died, or
// its send hung past keepFor) to retry, logging the lost attempt as ambiguous so that the next
// attempt looks the object up before creating it. It returns how many it
// released.
func (e *Engine) Rescue(ctx context.Context) (int, error) {
	expired, err := models.ExpiredLeases(e.db.WithContext(ctx), e.clock.Now(), 500)
	if err != nil {
		return 0, fmt.Errorf("find expired leases: %w", err)
	}
	return e.release(ctx, expired)
}

// release is the second half of Rescue, apart so tests can finish a link
// between the two and see the compare-and-set leave it alone.
func (e *Engine) release(ctx context.Context, expired []models.ExpiredLease) (int, error) {
	n := 0
	for _, x := range expired {
		now := e.clock.Now()
		a := models.Attempt{LinkID: x.ID, Number: x.Attempts + 1, Operation: "lease.expired", IdempotencyKey: x.IdempotencyKey,
			Outcome: models.OutcomeAmbiguous, Worker: e.opts.WorkerID, CreatedAt: now,
			Error: fmt.Sprintf("worker %s stopped answering mid-send; whether its call took effect is unknown, so the next attempt looks the object up first", x.LeaseOwner)}
		if x.ExternalID != "" {
			what := "update"
			if x.LeaseDeletes {
				what = "delete"
			}
			a.Error = fmt.Sprintf("worker %s stopped answering mid-send; the %s will be sent again", x.LeaseOwner, what)
		}
		ok, err := models.ReleaseExpired(e.db.WithContext(ctx), x, a, now)
		if err != nil {
			return n, fmt.Errorf("release link %d: %w", x.ID, err)
		}
		if ok {
			n++
		}
	}
	if n > 0 {
		e.poke()
	}
	return n, nil
}

// PruneAttempts deletes attempts older than the retention, in batches.
func (e *Engine) PruneAttempts(ctx context.Context, retention time.Duration) (int64, error) {
	var total int64
	before := e.clock.Now().Add(-retention)
	for ctx.Err() == nil {
		n, err := models.PruneAttempts(e.db.WithContext(ctx), before, 5000)
		total += n
		if err != nil || n < 5000 {
			return total, err
		}
	}
	return total, ctx.Err()
}

// MarkFailed stops a link's retries on an operator's word.
func (e *Engine) MarkFailed(ctx context.Context, id int64, who, reason string) (*models.Link, error) {
	return models.MarkFailed(e.db.WithContext(ctx), id, who, reason, e.clock.Now())
}

// Recreate queues a new create for a link whose remote object was deleted,
// once an operator has confirmed that it should exist.
func (e *Engine) Recreate(ctx context.Context, id int64) (*models.Link, error) {
	l, err := models.Recreate(e.db.WithContext(ctx), id, e.clock.Now())
	if err == nil {
		e.poke()
	}
	return l, err
}

// BulkRetry counts what a retry of many links did.
type BulkRetry struct {
	Queued int // asked to be sent now
	Busy   int // already in progress: left alone
	Gone   int // no such link (any more)
}

// RetryMany asks for each link to be sent now, as SyncNow does one: links
// already in progress are counted as busy and left alone, ids of no link as
// gone. It stops at the first other error, having counted what it did.
func (e *Engine) RetryMany(ctx context.Context, ids []int64, who string) (BulkRetry, error) {
	var r BulkRetry
	for _, id := range ids {
		_, err := e.SyncNow(ctx, id, who)
		var ip *models.InProgressError
		switch {
		case errors.As(err, &ip):
			r.Busy++
		case errors.Is(err, models.ErrNotFound):
			r.Gone++
		case err != nil:
			return r, fmt.Errorf("retry link %d: %w", id, err)
		default:
			r.Queued++
		}
	}
	return r, nil
}
