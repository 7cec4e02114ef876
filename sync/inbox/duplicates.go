package inbox

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// A re-sent event that is found stored by a read is answered without a
// write: its count (processed_events.duplicates, shown on the events'
// pages) is kept in memory and added to the table at most every
// duplicateWriteEvery, and on Flush and Close. A crash (not a shutdown,
// which flushes) loses at most the re-sends counted in the last
// duplicateWriteEvery, and those of writes that failed meanwhile (they are
// kept and tried again). Re-sends met inside a transaction are counted
// there (apply.go).
const duplicateWriteEvery = 2 * time.Second

// duplicates is the Receiver's count of re-sends not yet written.
type duplicates struct {
	mu      sync.Mutex
	pending map[dupKey]*dupTally
	timer   *time.Timer // the scheduled write, nil when none
	closed  bool

	// write serializes the writes, so that when Flush returns everything
	// counted before it was called has landed.
	write sync.Mutex
}

type dupKey struct{ provider, eventID string }

type dupTally struct {
	n     int
	at    time.Time // the last re-send's
	tries int       // writes that left it
}

// countDuplicate counts one re-send of an event, and schedules a write
// unless one is scheduled already.
func (r *Receiver) countDuplicate(provider, eventID string, at time.Time) {
	d := &r.dups
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending = map[dupKey]*dupTally{}
	}
	k := dupKey{provider, eventID}
	t := d.pending[k]
	if t == nil {
		t = &dupTally{}
		d.pending[k] = t
	}
	t.n++
	if at.After(t.at) {
		t.at = at
	}
	if d.timer == nil && !d.closed {
		d.timer = time.AfterFunc(duplicateWriteEvery, r.writeDuplicatesLater)
	}
}

// writeDuplicatesLater is a scheduled write; it schedules the next when
// re-sends came meanwhile or the write failed.
func (r *Receiver) writeDuplicatesLater() {
	ctx, cancel := context.WithTimeout(context.Background(), refusalWriteTimeout)
	defer cancel()
	if err := r.writeDuplicates(ctx); err != nil {
		r.log.Warn("count re-sent webhooks", "err", err)
	}
	d := &r.dups
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timer = nil
	if len(d.pending) > 0 && !d.closed {
		d.timer = time.AfterFunc(duplicateWriteEvery, r.writeDuplicatesLater)
	}
}

// writeDuplicates adds the counts to the table in one transaction; on
// failure they go back, to be written next time.
func (r *Receiver) writeDuplicates(ctx context.Context) error {
	d := &r.dups
	d.write.Lock()
	defer d.write.Unlock()
	d.mu.Lock()
	taken := d.pending
	d.pending = nil
	d.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	counts := make([]models.DuplicateCount, 0, len(taken))
	for k, t := range taken {
		counts = append(counts, models.DuplicateCount{Provider: k.provider, EventID: k.eventID, N: t.n, At: t.at})
	}
	var left []models.DuplicateCount
	err := r.transaction(ctx, func(tx *gorm.DB) (err error) {
		left, err = models.AddDuplicates(tx, counts)
		return err
	})
	if err != nil {
		r.restoreDuplicates(taken)
		return err
	}
	r.restoreDuplicates(unwritten(taken, left))
	return nil
}

// maxDuplicateTries bounds how many writes a count waits through: one
// whose event is pruned is never written.
const maxDuplicateTries = 30

// unwritten is the tallies of taken that a write left (their rows were
// held by a delivery), and have waited less than maxDuplicateTries writes.
func unwritten(taken map[dupKey]*dupTally, left []models.DuplicateCount) map[dupKey]*dupTally {
	out := map[dupKey]*dupTally{}
	for _, c := range left {
		k := dupKey{c.Provider, c.EventID}
		if t := taken[k]; t.tries < maxDuplicateTries {
			t.tries++
			out[k] = t
		}
	}
	return out
}

// restoreDuplicates puts back counts whose write failed.
func (r *Receiver) restoreDuplicates(taken map[dupKey]*dupTally) {
	d := &r.dups
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending = map[dupKey]*dupTally{}
	}
	for k, t := range taken {
		if p := d.pending[k]; p != nil {
			t.n += p.n
			t.tries = 0
			if p.at.After(t.at) {
				t.at = p.at
			}
		}
		d.pending[k] = t
	}
}

// stopDuplicates stops the scheduled writes; what is counted after it is
// not written.
func (r *Receiver) stopDuplicates() {
	d := &r.dups
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}
