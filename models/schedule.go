package models

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ScheduledTask is one background task's row, shared by every instance on
// the database: when it is next due, who is running it now, and how its
// last run went.
type ScheduledTask struct {
	Name          string `gorm:"primaryKey"`
	NextRunAt     time.Time
	RunToken      string // the running claim's; "" when no run holds the task
	RunningOn     string
	RunningSince  *time.Time
	RunningUntil  *time.Time // the lease: past it, the run is taken for dead
	LastInstance  string
	LastStartedAt *time.Time
	LastDoneAt    *time.Time
	LastError     string
	Runs          int64
	Failures      int // failed runs since the last success (the task_failing alert)
}

// TableName is the scheduled_tasks table.
func (ScheduledTask) TableName() string { return "scheduled_tasks" }

// Running reports whether a live run holds the task at now.
func (t ScheduledTask) Running(now time.Time) bool {
	return t.RunToken != "" && t.RunningUntil != nil && t.RunningUntil.After(now)
}

// RegisterTask makes sure the task has a row, first due at first. A row
// another instance made is kept as it is, except that a next run further
// away than latest (the period was shortened since) is brought to latest.
func RegisterTask(db *gorm.DB, name string, first, latest time.Time) error {
	row := ScheduledTask{Name: name, NextRunAt: first.UTC()}
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("register task %s: %w", name, err)
	}
	err := db.Model(&ScheduledTask{}).Where("name = ? AND next_run_at > ?", name, latest.UTC()).
		Update("next_run_at", latest.UTC()).Error
	if err != nil {
		return fmt.Errorf("register task %s: %w", name, err)
	}
	return nil
}

// GetScheduledTask reads one task's row; ErrNotFound when it has none.
func GetScheduledTask(db *gorm.DB, name string) (ScheduledTask, error) {
	var t ScheduledTask
	err := db.Where("name = ?", name).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return t, fmt.Errorf("scheduled task %s: %w", name, ErrNotFound)
	}
	return t, err
}

// ListScheduledTasks reads every task's row, by name.
func ListScheduledTasks(db *gorm.DB) ([]ScheduledTask, error) {
	var out []ScheduledTask
	if err := db.Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list scheduled tasks: %w", err)
	}
	return out, nil
}

// TaskClaim is one instance's bid to run a task.
type TaskClaim struct {
	Name     string
	Token    string // unique to this claim: renewals and the finish name it
	Instance string
	Now      time.Time
	Until    time.Time // the lease's end
	// Next is the next run to set when the claim is for a due run; a zero
	// Next (Run now) claims the task whether due or not and leaves its
	// next run alone.
	Next time.Time
}

// ClaimTask takes the task for one run and reports whether it did. The
// UPDATE is the compare-and-set that makes a period's run happen once
// across instances: of all the instances that find the task due at once,
// only the first to write it still finds it due and free; its write moves
// next_run_at past now and sets a lease, so every later writer's WHERE
// no longer matches (on Postgres the row lock makes the later UPDATE wait
// and re-check the new row).
func ClaimTask(db *gorm.DB, c TaskClaim) (bool, error) {
	now := c.Now.UTC()
	set := map[string]any{"run_token": c.Token, "running_on": c.Instance, "running_since": now, "running_until": c.Until.UTC()}
	q := db.Model(&ScheduledTask{}).Where("name = ? AND (run_token = '' OR running_until <= ?)", c.Name, now)
	if !c.Next.IsZero() {
		q = q.Where("next_run_at <= ?", now)
		set["next_run_at"] = c.Next.UTC()
	}
	res := q.Updates(set)
	if res.Error != nil {
		return false, fmt.Errorf("claim task %s: %w", c.Name, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// RenewTask extends a run's lease to until, and reports false when the
// claim is no longer the task's (its lease ran out and another took it).
func RenewTask(db *gorm.DB, name, token string, until time.Time) (bool, error) {
	res := db.Model(&ScheduledTask{}).Where("name = ? AND run_token = ?", name, token).
		Update("running_until", until.UTC())
	if res.Error != nil {
		return false, fmt.Errorf("renew task %s: %w", name, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// TaskRun is how one run went.
type TaskRun struct {
	Instance      string
	Started, Done time.Time
	Error         string // "" for a success
	// Stopped: our own stop cut the run short. It says nothing of the
	// task: its failures in a row stay as they were.
	Stopped bool
}

// FinishTask records a run's outcome and frees the task, if the claim is
// still the task's; false when it is not (its lease ran out mid-run).
func FinishTask(db *gorm.DB, name, token string, r TaskRun) (bool, error) {
	failures := gorm.Expr("0")
	switch {
	case r.Stopped:
		failures = gorm.Expr("failures")
	case r.Error != "":
		failures = gorm.Expr("failures + 1")
	}
	res := db.Model(&ScheduledTask{}).Where("name = ? AND run_token = ?", name, token).Updates(map[string]any{
		"run_token": "", "running_on": "", "running_since": nil, "running_until": nil,
		"last_instance": r.Instance, "last_started_at": r.Started.UTC(), "last_done_at": r.Done.UTC(),
		"last_error": r.Error, "runs": gorm.Expr("runs + 1"), "failures": failures,
	})
	if res.Error != nil {
		return false, fmt.Errorf("finish task %s: %w", name, res.Error)
	}
	return res.RowsAffected == 1, nil
}
