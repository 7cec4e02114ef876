-- The failed page's groups, as last counted. Counting them exactly means
-- reading every failed link's index entry: tens of milliseconds at tens of
-- thousands of failures, too slow for a page view. The refresh-stats task
-- recounts them every few seconds, and a bulk retry right after it acts.
CREATE TABLE stat_failed_groups (
    error_group TEXT     NOT NULL PRIMARY KEY,
    n           BIGINT   NOT NULL,
    example_id  BIGINT   NOT NULL,
    counted_at  TIMESTAMPTZ NOT NULL
);
