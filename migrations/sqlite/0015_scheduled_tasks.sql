-- One row per scheduled task, shared by every instance on the database, so
-- that a task runs once per period across all of them, not once per
-- instance. An instance runs a task only after a compare-and-set that finds
-- it due (next_run_at has passed) and free (no live lease), and moves
-- next_run_at to the next period in the same statement. The last run's
-- outcome, and which instance ran it, is what the schedules page shows.
CREATE TABLE scheduled_tasks (
    name            TEXT     PRIMARY KEY,
    next_run_at     DATETIME NOT NULL,
    run_token       TEXT     NOT NULL DEFAULT '', -- the running claim's; '' when idle
    running_on      TEXT     NOT NULL DEFAULT '',
    running_since   DATETIME,
    running_until   DATETIME,                     -- the lease, renewed while the run lasts
    last_instance   TEXT     NOT NULL DEFAULT '',
    last_started_at DATETIME,
    last_done_at    DATETIME,
    last_error      TEXT     NOT NULL DEFAULT '',
    runs            BIGINT   NOT NULL DEFAULT 0
);
