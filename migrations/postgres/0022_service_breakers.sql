-- One row per service: its circuit breaker, which every instance on this
-- database shares, so that a provider that answers nothing but 503 pauses
-- the service once, not once per instance, and is probed once per interval
-- in all. Each change is one conditional UPDATE on the row, on the
-- database's clock (Unix seconds, fractional, as in rate_limits): the
-- outcomes of calls add to the counts only while the breaker is closed, one
-- instance wins the trip (state closed → open), and one wins each probe
-- (probe_at reached → moved on by the interval).
--
-- consecutive counts the temporary failures since the last call that was
-- not one; run_answer is what they all answered ('*' when they differed).
-- The failure share is counted in fixed windows that start at the first
-- call after the last one ended.
CREATE TABLE service_breakers (
    service         TEXT    PRIMARY KEY,
    state           TEXT    NOT NULL DEFAULT 'closed', -- closed, or open: the service is paused automatically
    consecutive     INTEGER NOT NULL DEFAULT 0,
    run_answer      TEXT    NOT NULL DEFAULT '',
    last_answer     TEXT    NOT NULL DEFAULT '',
    window_start    DOUBLE PRECISION NOT NULL DEFAULT 0,
    window_calls    INTEGER NOT NULL DEFAULT 0,
    window_failures INTEGER NOT NULL DEFAULT 0,
    opened_at       DOUBLE PRECISION NOT NULL DEFAULT 0,
    probe_at        DOUBLE PRECISION NOT NULL DEFAULT 0, -- open: no probe before this
    probes          INTEGER NOT NULL DEFAULT 0  -- probes sent since it opened
);
