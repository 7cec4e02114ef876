package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/syncdesk/syncdesk/models"
)

// A link is claimed under a lease long enough for its longest send (two
// calls, each up to the service's timeout) with leaseSpare over, and
// leaseCovers hands back a job that waited in the queue too long for that.
// Once a sender has it, a call may still wait longer: for the provider's
// pace (a backlog at a slow rate, a Retry-After of minutes) or for a place
// among the calls in flight. Had the lease run out meanwhile, a rescuer
// would hand the link to another worker, and both would send it: two
// creates, or an old update written over a newer one. So:
//
//   - keepLeases renews the leases of the links in the senders before they
//     run short, for up to keepFor, and no rescuer takes a waiting link over;
//   - ready, which the connector runs after the wait and before each call,
//     lets the call go only while the lease outlasts it, renewing it first
//     when it is short, and never once the lease was lost.
//
// A send that ends in time, as nearly every send does, costs neither a
// round trip.

// keepFor bounds how long a link in a sender has its lease kept: the rate
// limiter's longest block (ratelimit.Options.MaxBlock's default), past
// which a send that has not ended is taken for hung, and its link left to
// the rescuer once its lease runs out.
const keepFor = 15 * time.Minute

// leaseCheck is how often keepLeases looks at the leases in the senders:
// a look that finds none short costs no round trip, and a lease is at
// least 10 s (Options.Lease).
const leaseCheck = time.Second

// heldLease is the lease on a link that is in a sender.
type heldLease struct {
	id      int64
	owner   string
	service string
	since   time.Time // when the sender took the job
	// until and lost are the pipe's (p.mu): the lease's end as last
	// written, and whether a renewal found the lease no longer ours.
	until time.Time
	lost  bool
}

// errLeaseLost is why a call is not sent once its link's lease was lost.
var errLeaseLost = errors.New("not sent: this worker's hold on the link ran out before the call could go; " +
	"whichever worker holds the link now sends it")

// hold registers a job's lease for keeping while a sender has the job.
func (p *pipe) hold(j job, now time.Time) *heldLease {
	h := &heldLease{id: j.link.ID, owner: j.link.LeaseOwner, service: j.link.ExternalService, since: now}
	if j.link.LockedUntil != nil {
		h.until = *j.link.LockedUntil
	}
	p.mu.Lock()
	p.held[h] = struct{}{}
	p.mu.Unlock()
	return h
}

// unhold stops keeping a lease: the job's outcome is with the writer.
func (p *pipe) unhold(h *heldLease) {
	p.mu.Lock()
	delete(p.held, h)
	p.mu.Unlock()
}

// ready lets a call for the held link go if the lease outlasts the
// longest send with leaseSpare over, renewing it first if it is short.
func (p *pipe) ready(ctx context.Context, h *heldLease) error {
	now := p.e.clock.Now()
	need := p.e.longestSend(h.service) + leaseSpare
	p.mu.Lock()
	short, lost := h.until.Sub(now) < need, h.lost
	p.mu.Unlock()
	if short && !lost {
		if err := p.renew(ctx, []*heldLease{h}, now); err != nil {
			return fmt.Errorf("not sent: the hold on the link could not be renewed: %w", err)
		}
		p.mu.Lock()
		lost = h.lost
		p.mu.Unlock()
	}
	if lost {
		p.e.log.Warn("lease ran out while a call waited; not sent", "service", h.service, "link", h.id, "lease", h.owner)
		return errLeaseLost
	}
	return nil
}

// keepLeases renews, until ctx ends, the leases of the links in the
// senders that have less than half a lease left and have been in their
// sender for less than keepFor: while renewals succeed, none runs out
// however long its call waits.
func (p *pipe) keepLeases(ctx context.Context) {
	lease := p.e.opts.Lease
	tick := time.NewTicker(leaseCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := p.e.clock.Now()
		short := p.toRenew(now)
		if len(short) == 0 {
			continue
		}
		renewCtx, cancel := context.WithTimeout(ctx, lease/4)
		if err := p.renew(renewCtx, short, now); err != nil && ctx.Err() == nil {
			p.e.log.Warn("renew the leases of links waiting to be sent", "links", len(short), "err", err)
		}
		cancel()
	}
}

// toRenew lists the held leases keepLeases renews at now: those not lost
// with less than half a lease left, of links in their sender for less than
// keepFor.
func (p *pipe) toRenew(now time.Time) []*heldLease {
	var out []*heldLease
	p.mu.Lock()
	defer p.mu.Unlock()
	for h := range p.held {
		if !h.lost && h.until.Sub(now) < p.e.opts.Lease/2 && now.Sub(h.since) < keepFor {
			out = append(out, h)
		}
	}
	return out
}

// renew moves the leases of hs to a full lease from now. One the database
// no longer gives to its owner, or that ran out, is marked lost; on an
// error, those of the owners not renewed yet stay as they were.
func (p *pipe) renew(ctx context.Context, hs []*heldLease, now time.Time) error {
	until := now.Add(p.e.opts.Lease)
	byOwner := map[string][]*heldLease{}
	for _, h := range hs {
		byOwner[h.owner] = append(byOwner[h.owner], h)
	}
	for owner, group := range byOwner {
		ids := make([]int64, len(group))
		for i, h := range group {
			ids[i] = h.id
		}
		done := p.turn()
		got, err := models.RenewLeases(p.e.db.WithContext(ctx), owner, ids, now, until)
		done()
		if err != nil {
			return err
		}
		// A link is held twice when its lease ran out and this pipe claimed
		// it again: what the database renewed is this owner's hold alone.
		renewed := make(map[int64]bool, len(got))
		for _, id := range got {
			renewed[id] = true
		}
		p.mu.Lock()
		for _, h := range group {
			if renewed[h.id] {
				h.until = until
			} else {
				h.lost = true
			}
		}
		p.mu.Unlock()
	}
	return nil
}
