-- An operator can pause sending to a service; every instance reads this table
-- before it claims, so a pause on one instance stops claims on all. The
-- primary key makes concurrent pauses of one service a single row.
CREATE TABLE service_pauses (
    service   TEXT        PRIMARY KEY,
    paused_by TEXT        NOT NULL,
    paused_at TIMESTAMPTZ NOT NULL,
    reason    TEXT        NOT NULL DEFAULT ''
);
