-- Each deliberate replay of a stored webhook event: when, who asked (the
-- audit log's actor: a user's email, or api:TOKEN-NAME) and what the effect
-- did that time. The event's own outcome and note stay those of its first
-- delivery. A replay goes with its event when events are pruned.
CREATE TABLE event_replays (
    id          INTEGER  PRIMARY KEY AUTOINCREMENT,
    provider    TEXT     NOT NULL,
    event_id    TEXT     NOT NULL,
    replayed_at DATETIME NOT NULL,
    replayed_by TEXT     NOT NULL,
    outcome     TEXT     NOT NULL,
    note        TEXT     NOT NULL DEFAULT '',
    FOREIGN KEY (provider, event_id) REFERENCES processed_events (provider, event_id) ON DELETE CASCADE
);
-- One event's replays in time order; also what the cascade of a prune looks up.
CREATE INDEX event_replays_event_idx ON event_replays (provider, event_id, replayed_at, id);

-- Until now a replay overwrote the event's outcome and note, with "replayed: "
-- before the note; those events' first outcome is lost. Say so rather than
-- let the page call the last replay's outcome the first.
UPDATE processed_events
   SET error = 'Replayed before syncdesk kept a history of replays, so this is the last replay''s outcome; the first is not known. Its note: ' || substr(error, 11)
 WHERE error LIKE 'replayed: %';
