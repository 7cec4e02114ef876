-- One row per service: the rate limit that every instance on this database
-- keeps to together, so that three instances do not send three times what
-- the provider allows. A request takes its slot with one UPDATE … RETURNING
-- on the row (never a read, then a write), computed on the database's clock.
--
-- The bucket is kept as GCRA's theoretical arrival time (tat), the moment
-- the bucket would be full again: a request may go at
-- max(now, tat - burst/rate, blocked_until) and moves tat on by 1/rate. One
-- number, no refill arithmetic, and a slot may lie in the future (the
-- caller sleeps until it), like a reservation of golang.org/x/time/rate.
--
-- Times are Unix seconds, fractional, on the database's clock: the same
-- arithmetic then runs on SQLite and Postgres. rate is the tighter of the
-- configured and the learned limits (0 for either: none), kept in step by
-- every statement that changes one of them.
CREATE TABLE rate_limits (
    service        TEXT   PRIMARY KEY,
    tat            REAL   NOT NULL DEFAULT 0,
    rate           REAL   NOT NULL DEFAULT 0, -- requests per second in force; 0 = no limit
    burst          REAL   NOT NULL DEFAULT 0,
    config_rate    REAL   NOT NULL DEFAULT 0, -- rate_limit.per_second, as the last instance to start had it
    config_burst   REAL   NOT NULL DEFAULT 0,
    learned_limit  BIGINT NOT NULL DEFAULT 0, -- the provider's "N requests per window", from its headers
    learned_window REAL   NOT NULL DEFAULT 0, -- seconds
    learned_rate   REAL   NOT NULL DEFAULT 0, -- the bucket that keeps under N in every window
    learned_burst  REAL   NOT NULL DEFAULT 0,
    learned_at     REAL   NOT NULL DEFAULT 0,
    blocked_until  REAL   NOT NULL DEFAULT 0, -- Retry-After or no requests remaining: none before this
    blocked_reason TEXT   NOT NULL DEFAULT ''
);
