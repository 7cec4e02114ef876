package models

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"gorm.io/gorm"
)

// RateLimit is one service's row in rate_limits: the limit all instances on
// the database keep to together (migration 0017 says how the bucket works).
// Times are Unix seconds on the database's clock.
type RateLimit struct {
	Service       string `gorm:"primaryKey"`
	TAT           float64
	Rate          float64
	Burst         float64
	ConfigRate    float64
	ConfigBurst   float64
	LearnedLimit  int64
	LearnedWindow float64
	LearnedRate   float64
	LearnedBurst  float64
	LearnedAt     float64
	BlockedUntil  float64
	BlockedReason string
}

// TableName is the rate_limits table.
func (RateLimit) TableName() string { return "rate_limits" }

// RateState is what a service's row says at one moment of the database's
// clock.
type RateState struct {
	// Now is the database's clock when the statement ran.
	Now time.Time
	// Rate is the requests per second in force; 0 means no limit is known.
	Rate, Burst float64
	// LearnedLimit and LearnedWindow are the provider's own limit, as its
	// headers last said; 0 when none did.
	LearnedLimit  int64
	LearnedWindow time.Duration
	// BlockedUntil is when requests may go again after a Retry-After or
	// an exhausted window; at or before Now when they may go now.
	BlockedUntil time.Time
}

// RateSlots are turns taken together: when each may go, and the row after
// taking them.
type RateSlots struct {
	RateState
	// Waits says, for each turn in order, how long after Now its request
	// may go; 0 for at once.
	Waits []time.Duration
}

// rateRow is what the statements return, in the database's units.
type rateRow struct {
	Now           float64
	TAT           float64
	Rate          float64
	Burst         float64
	LearnedLimit  int64
	LearnedWindow float64
	BlockedUntil  float64
}

// rateReturning lists rateRow's columns for a RETURNING or SELECT.
const rateReturning = `{now} AS now, tat, rate, burst, learned_limit, learned_window, blocked_until`

func (r rateRow) state() RateState {
	return RateState{Now: unixTime(r.Now), Rate: r.Rate, Burst: r.Burst, LearnedLimit: r.LearnedLimit,
		LearnedWindow: seconds(r.LearnedWindow), BlockedUntil: unixTime(r.BlockedUntil)}
}

// slots are when the n requests that moved tat to r.TAT may go, as if
// each had taken its turn alone: the i-th of n moved tat to
// r.TAT - (n-i)/rate, and goes no earlier than burst/rate before that, nor
// before a block ends.
func (r rateRow) slots(n int) RateSlots {
	out := RateSlots{RateState: r.state(), Waits: make([]time.Duration, n)}
	for i := range n {
		at := max(r.Now, r.BlockedUntil)
		if r.Rate > 0 {
			at = max(at, r.TAT-float64(n-1-i)/r.Rate-r.Burst/r.Rate)
		}
		out.Waits[i] = seconds(at - r.Now)
	}
	return out
}

// ConfigureRateLimit gives service its row and the configured rate and
// burst (0 for none), keeping what was learned; the tighter of the two is
// put in force. The last instance to start with a different configuration
// decides it for all.
func ConfigureRateLimit(db *gorm.DB, service string, rate, burst float64) error {
	q := `INSERT INTO rate_limits (service, config_rate, config_burst, rate, burst) VALUES (@service, @rate, @burst, @rate, @burst)
		ON CONFLICT (service) DO UPDATE SET config_rate = excluded.config_rate, config_burst = excluded.config_burst,
		rate = ` + tighter("excluded.config_rate", "rate_limits.learned_rate") + `,
		burst = ` + tighter("excluded.config_burst", "rate_limits.learned_burst")
	err := db.Exec(rateSQL(db, q), sql.Named("service", service), sql.Named("rate", rate), sql.Named("burst", burst)).Error
	if err != nil {
		return fmt.Errorf("configure the rate limit of %s: %w", service, err)
	}
	return nil
}

// TakeRateSlots takes the next n turns to call service and says how long
// each must wait: one instance's waiting requests share one statement, and
// one connection. The one UPDATE is the whole decision: on Postgres the
// row lock queues concurrent takers, on SQLite the write lock does, so no
// two requests of any instances get the same turn. A service without a
// rate takes nothing and waits only for a block. at is the time to use
// instead of the database's clock (tests); zero for the database's.
// ErrNotFound when the service has no row (ConfigureRateLimit makes it).
func TakeRateSlots(db *gorm.DB, service string, n int, at time.Time) (RateSlots, error) {
	n = max(n, 1)
	q := `UPDATE rate_limits SET tat = CASE WHEN rate > 0 THEN {max}(tat, {now}, blocked_until) + CAST(@n AS DOUBLE PRECISION) / rate ELSE tat END
		WHERE service = @service RETURNING ` + rateReturning
	row, err := rateExec(db, q, service, at, []any{sql.Named("n", n)})
	if err != nil {
		return RateSlots{}, fmt.Errorf("take a turn to call %s: %w", service, err)
	}
	return row.slots(n), nil
}

// ReadRateLimit reads service's row without taking a turn.
func ReadRateLimit(db *gorm.DB, service string, at time.Time) (RateState, error) {
	row, err := rateExec(db, `SELECT `+rateReturning+` FROM rate_limits WHERE service = @service`, service, at, nil)
	if err != nil {
		return RateState{}, fmt.Errorf("read the rate limit of %s: %w", service, err)
	}
	return row.state(), nil
}

// LearnedRate is a provider's limit as its headers told it.
type LearnedRate struct {
	// Limit requests per Window, as the provider said.
	Limit  int64
	Window time.Duration
	// Rate and Burst make the bucket that keeps under Limit in every
	// window.
	Rate, Burst float64
	// Used is how many requests the provider counted in the current
	// window: the bucket starts with that many fewer turns.
	Used float64
}

// LearnRateLimit records the provider's limit for service and puts the
// tighter of it and the configuration in force. Only a limit that differs
// from the one recorded changes the row (changed is false otherwise), so
// instances learning the same answer at once re-seed the bucket once.
// Re-seeded, the bucket owes the requests the provider has counted and
// the turns already handed out, at the new rate.
func LearnRateLimit(db *gorm.DB, service string, l LearnedRate, at time.Time) (state RateState, changed bool, err error) {
	newRate := tighter("config_rate", "CAST(@lrate AS DOUBLE PRECISION)")
	q := `UPDATE rate_limits SET learned_limit = @limit, learned_window = @window, learned_rate = @lrate, learned_burst = @lburst,
		learned_at = {now}, rate = ` + newRate + `, burst = ` + tighter("config_burst", "CAST(@lburst AS DOUBLE PRECISION)") + `,
		tat = {now} + (CAST(@used AS DOUBLE PRECISION) + CASE WHEN rate > 0 AND tat > {now} THEN (tat - {now}) * rate ELSE 0 END) / ` + newRate + `
		WHERE service = @service AND (learned_limit <> @limit OR learned_window <> @window) RETURNING ` + rateReturning
	args := []any{sql.Named("limit", l.Limit), sql.Named("window", l.Window.Seconds()), sql.Named("lrate", l.Rate),
		sql.Named("lburst", l.Burst), sql.Named("used", max(0, l.Used))}
	row, err := rateExec(db, q, service, at, args)
	if err == nil {
		return row.state(), true, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return RateState{}, false, fmt.Errorf("learn the rate limit of %s: %w", service, err)
	}
	// Unchanged, or no row: the row as it is tells which.
	state, err = ReadRateLimit(db, service, at)
	return state, false, err
}

// BlockRateLimit stops every instance from calling service for d from now
// (Retry-After, a window with nothing remaining), unless a longer block
// holds already, and returns the row with the block that holds. reason
// says why, in words, for the services page.
func BlockRateLimit(db *gorm.DB, service string, d time.Duration, reason string, at time.Time) (RateState, error) {
	q := `UPDATE rate_limits SET blocked_reason = CASE WHEN {now} + @for > blocked_until THEN @reason ELSE blocked_reason END,
		blocked_until = {max}(blocked_until, {now} + @for) WHERE service = @service RETURNING ` + rateReturning
	row, err := rateExec(db, q, service, at, []any{sql.Named("for", d.Seconds()), sql.Named("reason", reason)})
	if err != nil {
		return RateState{}, fmt.Errorf("hold the calls to %s: %w", service, err)
	}
	return row.state(), nil
}

// rateExec runs a statement returning one rateRow; ErrNotFound when it
// matched no row.
func rateExec(db *gorm.DB, q, service string, at time.Time, args []any) (rateRow, error) {
	var rows []rateRow
	var atArg any // NULL: the database's clock
	if !at.IsZero() {
		atArg = float64(at.UnixNano()) / 1e9
	}
	args = append(args, sql.Named("service", service), sql.Named("at", atArg))
	if err := db.Raw(rateSQL(db, q), args...).Scan(&rows).Error; err != nil {
		return rateRow{}, err
	}
	if len(rows) == 0 {
		return rateRow{}, fmt.Errorf("no rate limit row for %s: %w", service, ErrNotFound)
	}
	return rows[0], nil
}

// rateSQL fills in what the dialects spell differently: the clock, read
// once per statement (SQLite's 'now' holds for a whole statement;
// Postgres's statement_timestamp() is the statement's start), and the
// greatest of several values.
func rateSQL(db *gorm.DB, q string) string {
	if Dialect(db) == Postgres {
		return strings.NewReplacer("{now}", `COALESCE(CAST(@at AS DOUBLE PRECISION), EXTRACT(EPOCH FROM statement_timestamp())::float8)`,
			"{max}", "GREATEST").Replace(q)
	}
	return strings.NewReplacer("{now}", `COALESCE(@at, (julianday('now') - 2440587.5) * 86400.0)`, "{max}", "MAX").Replace(q)
}

// tighter is the SQL for the smaller of two limits where 0 means none.
func tighter(a, b string) string {
	return fmt.Sprintf("(CASE WHEN %[1]s = 0 THEN %[2]s WHEN %[2]s = 0 THEN %[1]s WHEN %[1]s < %[2]s THEN %[1]s ELSE %[2]s END)", a, b)
}

func unixTime(s float64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

func seconds(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// RateLimits returns every service's rate-limit row, for the Services page.
func RateLimits(db *gorm.DB) ([]RateLimit, error) {
	var rows []RateLimit
	if err := db.Order("service").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the rate limits: %w", err)
	}
	return rows, nil
}

// Learned is the provider's own limit as its headers last said it; zero
// when they never did.
func (r RateLimit) Learned() (limit int64, window time.Duration) {
	return r.LearnedLimit, seconds(r.LearnedWindow)
}

// Blocked says until when every instance holds off, and why; zero when
// no provider asked it to.
func (r RateLimit) Blocked() (time.Time, string) {
	if r.BlockedUntil <= 0 {
		return time.Time{}, ""
	}
	return unixTime(r.BlockedUntil), r.BlockedReason
}
