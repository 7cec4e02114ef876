package ratelimit

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// turns queues this instance's requests waiting for a turn from the row,
// so that one statement serves all those waiting at a moment.
type turns struct {
	mu      sync.Mutex
	waiting []chan turn
	taking  bool // a takeTurns goroutine is running
}

// turn is one request's answer: how long to wait, or the database's error.
type turn struct {
	wait time.Duration
	err  error
}

// takeTurns takes turns for the waiting requests, all of them in one
// statement, until none wait. It runs apart from any request, so that a
// request that gives up leaves the others' statement running; the
// statement's own bound is Options.DBTimeout.
func (l *Limiter) takeTurns() {
	for {
		l.turns.mu.Lock()
		batch := l.turns.waiting
		l.turns.waiting = nil
		if len(batch) == 0 {
			l.turns.taking = false
			l.turns.mu.Unlock()
			return
		}
		l.turns.mu.Unlock()
		now := l.opts.Clock.Now()
		slots, err := withRow(context.Background(), l, func(db *gorm.DB) (models.RateSlots, error) {
			return models.TakeRateSlots(db, l.service, len(batch), time.Time{})
		})
		if err == nil {
			l.record(slots.RateState, now)
		}
		for i, ch := range batch {
			if err != nil {
				ch <- turn{err: err}
				continue
			}
			ch <- turn{wait: slots.Waits[i]}
		}
	}
}
