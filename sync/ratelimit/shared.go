package ratelimit

import (
	"context"
	"errors"
	"math"
	"time"

	"golang.org/x/time/rate"
	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models"
)

// sharedState is this instance's copy of the service's row, and the local
// limiter that stands in for the row while the database fails.
type sharedState struct {
	configured   bool // the row exists and holds this instance's configuration
	row          models.RateState
	read         bool          // row was read from the database; its zero value says nothing
	readAt       time.Time     // local clock
	blockedUntil time.Time     // local clock
	fallingBack  bool          // the database fails: local paces alone
	local        *rate.Limiter // kept between failures, so a flapping database does not refill it
	retryAt      time.Time     // local clock: when to try the database again
}

// delay takes the request's turn and says how long until it. A service
// without a rate reads its row only every Refresh: the fast path of a
// provider that never said its limit costs no round trip.
func (l *Limiter) delay(ctx context.Context) (time.Duration, error) {
	now := l.opts.Clock.Now()
	l.mu.Lock()
	s := &l.shared
	switch {
	case s.fallingBack && now.Before(s.retryAt):
		defer l.mu.Unlock()
		return l.localDelay(now), nil
	case s.fallingBack:
		// This request tries the database again; the others meanwhile
		// keep to the local limiter instead of all waiting on it.
		s.retryAt = now.Add(l.opts.RetryDB)
	// Only a row read says there is no rate: between making the row and
	// reading it, requests must not take the fast path.
	case s.read && s.row.Rate == 0 && now.Sub(s.readAt) < l.opts.Refresh:
		defer l.mu.Unlock()
		return max(s.blockedUntil.Sub(now), 0), nil
	case s.read && s.row.Rate == 0:
		s.readAt = now // this request reads the row; the others go on
		l.mu.Unlock()
		return l.refresh(ctx, now)
	}
	l.mu.Unlock()
	return l.take(ctx, now)
}

// take takes a turn from the shared row. The requests waiting for one at
// the same moment share a statement (turns.go): an instance then holds at
// most one connection for its turns, however many senders wait, and a
// rate above what one statement per request could serve still holds.
func (l *Limiter) take(ctx context.Context, now time.Time) (time.Duration, error) {
	ch := make(chan turn, 1)
	l.turns.mu.Lock()
	l.turns.waiting = append(l.turns.waiting, ch)
	if !l.turns.taking {
		l.turns.taking = true
		go l.takeTurns()
	}
	l.turns.mu.Unlock()
	select {
	case t := <-ch:
		if t.err != nil {
			return l.dbFailed(ctx, t.err, now)
		}
		return t.wait, nil
	case <-ctx.Done():
		return 0, ctx.Err() // its turn, when it comes, is spent
	}
}

// refresh reads the row of a service without a rate, and takes a turn
// from it when a rate has appeared.
func (l *Limiter) refresh(ctx context.Context, now time.Time) (time.Duration, error) {
	st, err := withRow(ctx, l, func(db *gorm.DB) (models.RateState, error) {
		return models.ReadRateLimit(db, l.service, time.Time{})
	})
	if err != nil {
		return l.dbFailed(ctx, err, now)
	}
	l.record(st, now)
	if st.Rate > 0 {
		return l.take(ctx, now)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.shared.blockedUntil.Sub(now), 0), nil
}

// learn records a limit the provider told, for every instance.
func (l *Limiter) learn(sig signal) {
	now := l.opts.Clock.Now()
	r, b := sig.rate, sig.burst
	l.mu.Lock()
	same := l.shared.row.LearnedLimit == sig.limit && l.shared.row.LearnedWindow == sig.window
	if local := l.shared.local; l.shared.fallingBack {
		// The database is failing: keep to the limit here, at least.
		local.SetLimitAt(now, min(local.Limit(), rate.Limit(r)))
		local.SetBurstAt(now, min(local.Burst(), int(b)))
	}
	l.mu.Unlock()
	if same {
		return
	}
	used := 0.0
	if sig.remaining >= 0 {
		used = float64(max(sig.limit-sig.remaining, 0))
	}
	learned := models.LearnedRate{Limit: sig.limit, Window: sig.window, Rate: r, Burst: b, Used: used}
	st, err := withRow(context.Background(), l, func(db *gorm.DB) (learnt, error) {
		st, changed, err := models.LearnRateLimit(db, l.service, learned, time.Time{})
		return learnt{st, changed}, err
	})
	if err != nil {
		_, _ = l.dbFailed(context.Background(), err, now)
		return
	}
	l.record(st.RateState, now)
	if st.changed {
		l.log.Info("rate limit learned from the provider's answers", "limit", sig.limit, "window", sig.window,
			"headers", sig.source, "pacing_per_second", math.Round(st.Rate*100)/100, "pacing_burst", st.Burst)
	}
}

type learnt struct {
	models.RateState
	changed bool
}

// block holds every instance off the service for d.
func (l *Limiter) block(d time.Duration, reason string) {
	now := l.opts.Clock.Now()
	l.mu.Lock()
	if until := now.Add(d); until.After(l.shared.blockedUntil) {
		l.shared.blockedUntil = until
	}
	l.mu.Unlock()
	st, err := withRow(context.Background(), l, func(db *gorm.DB) (models.RateState, error) {
		return models.BlockRateLimit(db, l.service, d, reason, time.Time{})
	})
	if err != nil {
		_, _ = l.dbFailed(context.Background(), err, now)
		return
	}
	l.record(st, now)
	l.log.Info("calls held for every instance", "for", d, "reason", reason)
}

// record keeps what the row said at now (local clock), and ends a fall
// back to the local limiter.
func (l *Limiter) record(st models.RateState, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &l.shared
	s.row, s.read, s.readAt = st, true, now
	if until := now.Add(st.BlockedUntil.Sub(st.Now)); st.BlockedUntil.After(st.Now) && until.After(s.blockedUntil) {
		s.blockedUntil = until
	}
	if st.Rate > 0 {
		l.known.Store(true)
	}
	if s.fallingBack {
		s.fallingBack = false
		l.log.Info("rate limit shared with the other instances again: the database answers")
	}
}

func (l *Limiter) learnedWindow() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shared.row.LearnedWindow
}

// dbFailed paces the request with a limiter of this instance alone when
// the database fails. Sending must not stall because the rate limit's row
// cannot be read: a hung database would hold every sender for as long,
// while links already claimed wait to go. The local limiter keeps to the
// last rate the row said (or the configured one), and the provider's own
// 429s still hold it back; the database is tried again after RetryDB. The
// failure is logged once, when the fall back starts.
func (l *Limiter) dbFailed(ctx context.Context, err error, now time.Time) (time.Duration, error) {
	if ctx.Err() != nil {
		return 0, ctx.Err() // the caller gave up: not the database's fault
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &l.shared
	s.retryAt = now.Add(l.opts.RetryDB)
	if !s.fallingBack {
		s.fallingBack = true
		r, b := rate.Inf, 1
		if s.row.Rate > 0 {
			r, b = rate.Limit(s.row.Rate), max(1, int(s.row.Burst))
		} else if l.cfg.PerSecond > 0 {
			r, b = rate.Limit(l.cfg.PerSecond), l.cfg.BurstSize()
		}
		if s.local == nil {
			s.local = rate.NewLimiter(r, b)
		}
		s.local.SetLimitAt(now, r)
		s.local.SetBurstAt(now, b)
		l.log.Warn("rate limit kept by this instance alone: its database row cannot be used", "per_second", float64(r), "error", err)
	}
	return l.localDelay(now), nil
}

// localDelay takes a turn from the local limiter; l.mu is held.
func (l *Limiter) localDelay(now time.Time) time.Duration {
	d := l.shared.local.ReserveN(now, 1).DelayFrom(now)
	return max(d, l.shared.blockedUntil.Sub(now), 0)
}

// withRow runs fn on the database under DBTimeout, first giving the
// service its row; a row gone missing (deleted by hand) is made again.
func withRow[T any](ctx context.Context, l *Limiter, fn func(db *gorm.DB) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.DBTimeout)
	defer cancel()
	db := l.db.WithContext(ctx)
	l.mu.Lock()
	configured := l.shared.configured
	l.mu.Unlock()
	var zero T
	if !configured {
		if err := l.configure(db); err != nil {
			return zero, err
		}
	}
	v, err := fn(db)
	if errors.Is(err, models.ErrNotFound) {
		if err := l.configure(db); err != nil {
			return zero, err
		}
		v, err = fn(db)
	}
	return v, err
}

func (l *Limiter) configure(db *gorm.DB) error {
	if err := models.ConfigureRateLimit(db, l.service, l.cfg.PerSecond, float64(l.cfg.BurstSize())); err != nil {
		return err
	}
	l.mu.Lock()
	l.shared.configured = true
	l.mu.Unlock()
	return nil
}
