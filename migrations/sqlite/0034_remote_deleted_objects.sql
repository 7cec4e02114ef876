-- The objects a provider reported deleted, by the link the deletion was
-- matched to (its object, or one found by our key on a link that never
-- learnt its object's id). Re-created, the link points at a new object, and
-- a late or replayed event about a deleted one still carries our key: this
-- is how the inbox tells it from an event about the new object, and leaves
-- the link alone. A row per deletion: a link may be re-created many times.
-- The key is the lookup (link, event's object id); the rows go with their
-- link.
CREATE TABLE remote_deleted_objects (
    link_id     INTEGER  NOT NULL REFERENCES external_map (id) ON DELETE CASCADE,
    external_id TEXT     NOT NULL,
    reported_at DATETIME NOT NULL,
    PRIMARY KEY (link_id, external_id)
);
