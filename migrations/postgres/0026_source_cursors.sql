-- One row per configured source (a business database's outbox table or
-- change query): where syncdesk has read to, advanced in the same
-- transaction as the records that reading stored, so that a crash never
-- skips a row nor counts one twice. version is the compare-and-set that
-- keeps two instances from both advancing it. Its pause is its own, not a
-- service's: pausing a source must not hold the engine's sends.
CREATE TABLE source_cursors (
    source        TEXT        PRIMARY KEY,
    version       BIGINT      NOT NULL DEFAULT 0,
    last_id       BIGINT      NOT NULL DEFAULT 0,  -- the outbox id, or the change query's id at last_at
    last_at       TIMESTAMPTZ,                     -- the change query's updated_at at the cursor
    rows_read     BIGINT      NOT NULL DEFAULT 0,
    refused       BIGINT      NOT NULL DEFAULT 0,  -- rows the engine would not take
    last_refusal  TEXT        NOT NULL DEFAULT '',
    skipped       BIGINT      NOT NULL DEFAULT 0,  -- outbox ids given up on after the gap timeout
    last_skip     TEXT        NOT NULL DEFAULT '',
    read_at       TIMESTAMPTZ,                     -- the last read that went well
    caught_up_at  TIMESTAMPTZ,                     -- the last read that found nothing more to read
    last_error    TEXT        NOT NULL DEFAULT '',
    failed_at     TIMESTAMPTZ,
    paused_by     TEXT        NOT NULL DEFAULT '',
    paused_at     TIMESTAMPTZ,
    pause_reason  TEXT        NOT NULL DEFAULT ''
);
