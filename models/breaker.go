package models

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/syncdesk/syncdesk/models/action"
)

// AutomaticPauser is who a pause made by a service's circuit breaker is by:
// the audit log's actor and the pause's paused_by. A person's pause is never
// by this name, which is how a manual pause is told from an automatic one.
const AutomaticPauser = "syncdesk (automatic)"

// BreakerTally is what one instance saw of a service's calls since it last
// wrote to the breaker's row.
type BreakerTally struct {
	Calls    int // calls counted: temporary failures and calls the provider answered
	Failures int // temporary failures among them
	// Reset: a call the provider answered came after the row's run of
	// failures, which then starts again at Trailing.
	Reset bool
	// Trailing counts the failures after the tally's last answered call
	// (all of them when Reset is false).
	Trailing int
	// Answer is what the trailing failures answered ("answered 503"), "*"
	// when they differed; Last is what the last failure answered.
	Answer, Last string
}

// BreakerCounts is a breaker's row after a change.
type BreakerCounts struct {
	Consecutive    int
	RunAnswer      string // what the run of failures answered; "*" when they differed
	LastAnswer     string
	WindowCalls    int
	WindowFailures int
}

// BreakerLimits are the thresholds that open a breaker.
type BreakerLimits struct {
	Consecutive int
	Ratio       float64
	MinCalls    int
	ProbeEvery  time.Duration
}

// Trips reports whether counts pass the limits.
func (l BreakerLimits) Trips(c BreakerCounts) bool {
	return c.Consecutive >= l.Consecutive ||
		(c.WindowCalls >= l.MinCalls && float64(c.WindowFailures) >= l.Ratio*float64(c.WindowCalls))
}

const breakerReturning = `consecutive, run_answer, last_answer, window_calls, window_failures`

// RecordBreakerCalls adds t to service's closed breaker, counting the
// failure share in fixed windows of window, and returns the counts; open
// is true (and counts zero) when the breaker is open, which counts
// nothing. at is the time to use instead of the database's clock (tests);
// zero for the database's. The row is made at the first call.
func RecordBreakerCalls(db *gorm.DB, service string, t BreakerTally, window time.Duration, at time.Time) (counts BreakerCounts, open bool, err error) {
	expired := `window_start + CAST(@window AS DOUBLE PRECISION) <= {now}`
	q := `UPDATE service_breakers SET
		window_calls = CASE WHEN ` + expired + ` THEN CAST(@calls AS INTEGER) ELSE window_calls + CAST(@calls AS INTEGER) END,
		window_failures = CASE WHEN ` + expired + ` THEN CAST(@failures AS INTEGER) ELSE window_failures + CAST(@failures AS INTEGER) END,
		window_start = CASE WHEN ` + expired + ` THEN {now} ELSE window_start END,
		consecutive = CASE WHEN CAST(@reset AS INTEGER) = 1 THEN CAST(@trailing AS INTEGER) ELSE consecutive + CAST(@trailing AS INTEGER) END,
		run_answer = CASE WHEN CAST(@trailing AS INTEGER) = 0 THEN run_answer
			WHEN CAST(@reset AS INTEGER) = 1 OR consecutive = 0 THEN CAST(@answer AS TEXT)
			WHEN run_answer = CAST(@answer AS TEXT) THEN run_answer ELSE '*' END,
		last_answer = CASE WHEN CAST(@trailing AS INTEGER) > 0 THEN CAST(@last AS TEXT) ELSE last_answer END
		WHERE service = @service AND state = 'closed' RETURNING ` + breakerReturning
	reset := 0
	if t.Reset {
		reset = 1
	}
	args := []any{sql.Named("window", window.Seconds()), sql.Named("calls", t.Calls), sql.Named("failures", t.Failures),
		sql.Named("reset", reset), sql.Named("trailing", t.Trailing), sql.Named("answer", t.Answer), sql.Named("last", t.Last)}
	for range 2 {
		var rows []BreakerCounts
		if err := db.Raw(rateSQL(db, q), append(args, sql.Named("service", service), atArg(at))...).Scan(&rows).Error; err != nil {
			return BreakerCounts{}, false, fmt.Errorf("count the calls to %s for its breaker: %w", service, err)
		}
		if len(rows) == 1 {
			return rows[0], false, nil
		}
		state, err := breakerState(db, service)
		if err != nil {
			return BreakerCounts{}, false, err
		}
		if state != "" {
			return BreakerCounts{}, true, nil
		}
		if err := db.Exec(`INSERT INTO service_breakers (service) VALUES (?) ON CONFLICT (service) DO NOTHING`, service).Error; err != nil {
			return BreakerCounts{}, false, fmt.Errorf("make the breaker of %s: %w", service, err)
		}
	}
	return BreakerCounts{}, false, fmt.Errorf("count the calls to %s for its breaker: its row keeps disappearing", service)
}

// breakerState is "closed", "open", or "" when service has no row.
func breakerState(db *gorm.DB, service string) (string, error) {
	var states []string
	if err := db.Raw(`SELECT state FROM service_breakers WHERE service = ?`, service).Scan(&states).Error; err != nil {
		return "", fmt.Errorf("read the breaker of %s: %w", service, err)
	}
	if len(states) == 0 {
		return "", nil
	}
	return states[0], nil
}

// TripBreaker opens service's breaker when it is closed and its counts
// still pass limits, and pauses the service as AutomaticPauser with the
// reason reason(counts) gives, audited, in one transaction: of instances
// racing, one opens it (opened). A service already paused by hand keeps
// that pause; the breaker opens all the same, and a resume closes it.
// now dates the pause and its audit entry.
func TripBreaker(db *gorm.DB, service string, l BreakerLimits, reason func(BreakerCounts) string, now, at time.Time) (opened bool, why string, err error) {
	q := `UPDATE service_breakers SET state = 'open', opened_at = {now}, probe_at = {now} + CAST(@every AS DOUBLE PRECISION), probes = 0
		WHERE service = @service AND state = 'closed' AND (consecutive >= CAST(@consecutive AS INTEGER)
			OR (window_calls >= CAST(@min AS INTEGER) AND CAST(window_failures AS DOUBLE PRECISION) >= CAST(@ratio AS DOUBLE PRECISION) * window_calls))
		RETURNING ` + breakerReturning
	err = db.Transaction(func(tx *gorm.DB) error {
		var rows []BreakerCounts
		if err := tx.Raw(rateSQL(tx, q), sql.Named("every", l.ProbeEvery.Seconds()), sql.Named("consecutive", l.Consecutive),
			sql.Named("min", l.MinCalls), sql.Named("ratio", l.Ratio), sql.Named("service", service), atArg(at)).Scan(&rows).Error; err != nil {
			return fmt.Errorf("open the breaker of %s: %w", service, err)
		}
		if len(rows) == 0 {
			return nil
		}
		opened, why = true, reason(rows[0])
		if err := tx.Exec(`INSERT INTO service_pauses (service, paused_by, paused_at, reason) VALUES (?, ?, ?, ?) ON CONFLICT (service) DO NOTHING`,
			service, AutomaticPauser, now.UTC(), why).Error; err != nil {
			return fmt.Errorf("pause %s automatically: %w", service, err)
		}
		return Audit(tx, AuditEntry{At: now, Actor: AutomaticPauser, Action: action.ServicePause, Target: service, Outcome: OutcomeSuccess, Detail: why})
	})
	if err != nil {
		return false, "", err
	}
	return opened, why, nil
}

// TakeProbe takes the next probe of service's open breaker for the caller:
// of all instances, one a probe interval. A breaker whose pause a person
// has made their own (or lifted) is not probed. When the probe is not the
// caller's, wait says how long until the next may be taken (0: unknown).
func TakeProbe(db *gorm.DB, service string, every time.Duration, at time.Time) (taken bool, wait time.Duration, err error) {
	q := `UPDATE service_breakers SET probe_at = {now} + CAST(@every AS DOUBLE PRECISION), probes = probes + 1
		WHERE service = @service AND state = 'open' AND probe_at <= {now}
			AND EXISTS (SELECT 1 FROM service_pauses p WHERE p.service = service_breakers.service AND p.paused_by = @auto)
		RETURNING probes`
	var probes []int
	if err := db.Raw(rateSQL(db, q), sql.Named("every", every.Seconds()), sql.Named("service", service),
		sql.Named("auto", AutomaticPauser), atArg(at)).Scan(&probes).Error; err != nil {
		return false, 0, fmt.Errorf("take a probe of %s: %w", service, err)
	}
	if len(probes) == 1 {
		return true, 0, nil
	}
	var waits []float64
	if err := db.Raw(rateSQL(db, `SELECT probe_at - {now} FROM service_breakers WHERE service = @service AND state = 'open'`),
		sql.Named("service", service), atArg(at)).Scan(&waits).Error; err != nil {
		return false, 0, fmt.Errorf("read the next probe of %s: %w", service, err)
	}
	if len(waits) == 1 {
		wait = seconds(waits[0])
	}
	return false, wait, nil
}

// CloseBreaker closes service's open breaker after a probe the provider
// answered, and lifts its automatic pause, audited as AutomaticPauser, in
// one transaction. A pause a person made (or took over) stays, and so does
// the open breaker: closed is false.
func CloseBreaker(db *gorm.DB, service string, detail string, now time.Time) (closed bool, err error) {
	err = db.Transaction(func(tx *gorm.DB) error {
		// The breaker's row first, as every statement that changes both
		// takes them: two transactions never wait on each other's row.
		res := tx.Exec(`UPDATE service_breakers SET `+closedSet+` WHERE service = ? AND state = 'open'
			AND EXISTS (SELECT 1 FROM service_pauses p WHERE p.service = service_breakers.service AND p.paused_by = ?)`, service, AutomaticPauser)
		if res.Error != nil {
			return fmt.Errorf("close the breaker of %s: %w", service, res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		if err := tx.Where("service = ? AND paused_by = ?", service, AutomaticPauser).Delete(&ServicePause{}).Error; err != nil {
			return fmt.Errorf("resume %s automatically: %w", service, err)
		}
		closed = true
		return Audit(tx, AuditEntry{At: now, Actor: AutomaticPauser, Action: action.ServiceResume, Target: service, Outcome: OutcomeSuccess, Detail: detail})
	})
	return closed, err
}

// closedSet is a breaker closed afresh: nothing counted.
const closedSet = `state = 'closed', consecutive = 0, run_answer = '', last_answer = '', window_start = 0, window_calls = 0,
	window_failures = 0, opened_at = 0, probe_at = 0, probes = 0`

// ServiceBreaker is one service's breaker row.
type ServiceBreaker struct {
	Service        string `gorm:"primaryKey"`
	State          string
	Consecutive    int
	RunAnswer      string
	LastAnswer     string
	WindowStart    float64
	WindowCalls    int
	WindowFailures int
	OpenedAt       float64
	ProbeAt        float64
	Probes         int
}

// TableName is the service_breakers table.
func (ServiceBreaker) TableName() string { return "service_breakers" }

// ReadBreaker returns service's breaker row; ErrNotFound when it has none.
func ReadBreaker(db *gorm.DB, service string) (ServiceBreaker, error) {
	var b ServiceBreaker
	err := db.Where("service = ?", service).Take(&b).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return b, fmt.Errorf("no breaker for %s: %w", service, ErrNotFound)
	}
	return b, err
}

func atArg(at time.Time) sql.NamedArg {
	if at.IsZero() {
		return sql.Named("at", nil) // NULL: the database's clock
	}
	return sql.Named("at", float64(at.UnixNano())/1e9)
}

// BreakerStates returns each service's breaker state ("closed" or "open")
// by service; a service that has made no call has no row, and no entry.
func BreakerStates(db *gorm.DB) (map[string]string, error) {
	var rows []ServiceBreaker
	if err := db.Select("service", "state").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the breakers: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Service] = r.State
	}
	return out, nil
}
