-- Aggregates the overview reads instead of counting millions of rows per
-- page view. A scheduled task refreshes them every few seconds.
CREATE TABLE stat_link_counts (
    service    TEXT     NOT NULL,
    status     TEXT     NOT NULL,
    n          BIGINT   NOT NULL,
    counted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (service, status)
);
CREATE TABLE stat_attempt_hours (
    hour       TIMESTAMPTZ NOT NULL,
    outcome    TEXT     NOT NULL,
    n          BIGINT   NOT NULL,
    counted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (hour, outcome)
);
CREATE INDEX external_map_status_updated_idx ON external_map (status, updated_at);
