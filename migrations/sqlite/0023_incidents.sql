-- Alerts: incidents the rules open, the notifications each sends, samples of
-- counts for the rules that watch a rise, and a scheduled task's failed
-- runs in a row.

-- An incident is one rule holding for one subject (a service, a task; ''
-- for the whole desk), from opened_at until resolved_at. The partial
-- unique index keeps at most one open incident per (rule, subject): two
-- instances checking the rules at once both INSERT … ON CONFLICT DO
-- NOTHING, and one opens it. notified_at is the last "opened" or "still
-- open" sent; the repeat is a compare-and-set on it, so one instance sends
-- each repeat.
CREATE TABLE incidents (
    id              INTEGER  PRIMARY KEY AUTOINCREMENT,
    rule            TEXT     NOT NULL,
    subject         TEXT     NOT NULL,
    title           TEXT     NOT NULL,
    text            TEXT     NOT NULL,
    url             TEXT     NOT NULL DEFAULT '',
    opened_at       DATETIME NOT NULL,
    notified_at     DATETIME NOT NULL,
    resolved_at     DATETIME,
    acknowledged_by TEXT     NOT NULL DEFAULT '',
    acknowledged_at DATETIME
);
CREATE UNIQUE INDEX incidents_one_open_key ON incidents (rule, subject) WHERE resolved_at IS NULL;
CREATE INDEX incidents_resolved_idx ON incidents (resolved_at, id);

-- One row per incident state change (or repeat) and channel, written in the
-- transaction that decided it. Delivery claims due rows with a lease
-- (status pending and next_at reached, or sending with its lease past), so
-- that one notification is sent by one instance; a failed send goes back to
-- pending at a later next_at, until it is sent or given up. last_error is
-- the failure in words, with the channels' secrets masked.
CREATE TABLE incident_notifications (
    id          INTEGER  PRIMARY KEY AUTOINCREMENT,
    incident_id BIGINT   NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    state       TEXT     NOT NULL, -- opened, still open, resolved
    channel     TEXT     NOT NULL,
    title       TEXT     NOT NULL,
    text        TEXT     NOT NULL,
    decided_at  DATETIME NOT NULL,
    status      TEXT     NOT NULL DEFAULT 'pending', -- pending, sending, sent, gave_up
    tries       INTEGER  NOT NULL DEFAULT 0,
    next_at     DATETIME NOT NULL,
    lease_owner TEXT     NOT NULL DEFAULT '',
    lease_until DATETIME,
    sent_at     DATETIME,
    last_error  TEXT     NOT NULL DEFAULT ''
);
CREATE INDEX incident_notifications_due_idx ON incident_notifications (next_at) WHERE status IN ('pending', 'sending');
CREATE INDEX incident_notifications_incident_idx ON incident_notifications (incident_id, id);

-- A rule that watches a rise compares a count now with the count it
-- sampled a while ago. anchor is where the sampled sum starts (refused
-- webhooks are counted per hour: the sum from anchor's hour on is compared
-- with the same sum later, so the hours' boundaries do not matter).
CREATE TABLE alert_samples (
    rule     TEXT     NOT NULL,
    subject  TEXT     NOT NULL,
    taken_at DATETIME NOT NULL,
    anchor   DATETIME NOT NULL,
    value    BIGINT   NOT NULL,
    PRIMARY KEY (rule, subject, taken_at)
);

-- A scheduled task's failed runs since its last success.
ALTER TABLE scheduled_tasks ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
