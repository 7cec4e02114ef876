-- Webhook deliveries refused before anything was stored (a missing or bad
-- signature, a stale timestamp, a body that cannot be read as an event),
-- counted per hour, service and reason, so that a misconfigured secret
-- shows on the pages instead of only in a rate-limited log line. The body
-- of a refused delivery is never stored: last_detail is the refusal's short
-- reason in words (which header, which check), as the sender was answered.
-- Each instance counts in memory and adds its counts at most about once a
-- second per service, with one INSERT … ON CONFLICT DO UPDATE per row.
--
-- The hour comes first in the key: the pages read the last day's rows and
-- pruning deletes the oldest, both by range on it. The last good delivery
-- per service is read from processed_events_provider_list_idx (0005).
CREATE TABLE webhook_refusals (
    hour        DATETIME NOT NULL,
    service     TEXT     NOT NULL,
    reason      TEXT     NOT NULL, -- signature, timestamp or shape
    n           BIGINT   NOT NULL,
    last_at     DATETIME NOT NULL,
    last_detail TEXT     NOT NULL DEFAULT '',
    PRIMARY KEY (hour, service, reason)
);
