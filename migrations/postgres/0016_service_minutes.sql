-- Calls per minute, service and outcome: the Services page sums the last
-- hour's sixty minutes instead of joining every recent attempt to its link
-- (half a second per view at a million links). refresh-stats counts the
-- minutes not counted yet, and the current and the previous one again.
CREATE TABLE stat_service_minutes (
    minute     TIMESTAMPTZ NOT NULL,
    service    TEXT     NOT NULL,
    outcome    TEXT     NOT NULL,
    n          BIGINT   NOT NULL,
    counted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (minute, service, outcome)
);
