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
//     run short, and no rescuer takes a waiting link over;
//   - ready, which the connector runs after the wait and before each call,
//     lets the call go only while the lease outlasts it, renewing it first
//     when it is short, and never once another worker holds the link.
//
// A send that ends in time, as nearly every send does, costs neither a
// round trip.

// heldLease is the lease on a link that is in a sender.
type heldLease struct {
	id      int64
	owner   string
	service string
	// until and lost are the pipe's (p.mu): the lease's end as last
	// written, and whether a renewal found the link no longer ours.
	until time.Time
	lost  bool
}

// errLeaseLost is why a call is not sent for a link another worker holds.
var errLeaseLost = errors.New("not sent: this worker waited so long for the service's rate limit that its hold on the link ran out, and another worker has the link now")

// hold registers a job's lease for keeping while a sender has the job.
func (p *pipe) hold(j job) *heldLease {
	h := &heldLease{id: j.link.ID, owner: j.link.LeaseOwner, service: j.link.ExternalService}
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
		return errLeaseLost
	}
	return nil
}

// leaseCheck is how often keepLeases looks at the leases in the senders:
// a look that finds none short costs no round trip, and a lease is at
// least 10 s (Options.Lease).
const leaseCheck = time.Second

// keepLeases renews, until done closes, the leases of the links in the
// senders that have less than half a lease left: while renewals succeed,
// none runs out however long its call waits.
func (p *pipe) keepLeases(done <-chan struct{}) {
	lease := p.e.opts.Lease
	tick := time.NewTicker(leaseCheck)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		now := p.e.clock.Now()
		var short []*heldLease
		p.mu.Lock()
		for h := range p.held {
			if !h.lost && h.until.Sub(now) < lease/2 {
				short = append(short, h)
			}
		}
		p.mu.Unlock()
		if len(short) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), lease/4)
		if err := p.renew(ctx, short, now); err != nil {
			p.e.log.Warn("renew the leases of links waiting to be sent", "links", len(short), "err", err)
		}
		cancel()
	}
}

// renew moves the leases of hs to a full lease from now. One the database
// no longer gives to its owner, or that ran out, is marked lost; on an
// error none changes.
func (p *pipe) renew(ctx context.Context, hs []*heldLease, now time.Time) error {
	until := now.Add(p.e.opts.Lease)
	byOwner := map[string][]int64{}
	for _, h := range hs {
		byOwner[h.owner] = append(byOwner[h.owner], h.id)
	}
	renewed := map[int64]bool{}
	for owner, ids := range byOwner {
		done := p.turn()
		got, err := models.RenewLeases(p.e.db.WithContext(ctx), owner, ids, now, until)
		done()
		if err != nil {
			return err
		}
		for _, id := range got {
			renewed[id] = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range hs {
		if renewed[h.id] {
			h.until = until
		} else {
			h.lost = true
		}
	}
	return nil
}
