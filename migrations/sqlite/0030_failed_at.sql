-- When a link failed: the time it last entered failed, which is what the
-- overview's Newest failures sorts and shows. It sorted by updated_at, and
-- a write that leaves a failed link failed (a webhook about its object, a
-- note) moved the link to the top as "just now". A trigger sets it, as
-- 0020's does put_aside_at, so that no path that fails a link can forget
-- it, to the updated_at the failing write gives (the engine's clock).
ALTER TABLE external_map ADD COLUMN failed_at DATETIME;
UPDATE external_map SET failed_at = updated_at WHERE status = 'failed';

CREATE TRIGGER external_map_fail AFTER UPDATE OF status ON external_map
FOR EACH ROW WHEN NEW.status = 'failed' AND OLD.status <> 'failed'
BEGIN
    UPDATE external_map SET failed_at = NEW.updated_at WHERE id = NEW.id;
END;
CREATE TRIGGER external_map_insert_failed AFTER INSERT ON external_map
FOR EACH ROW WHEN NEW.status = 'failed'
BEGIN
    UPDATE external_map SET failed_at = NEW.updated_at WHERE id = NEW.id;
END;

-- Newest failures reads this index instead of one on updated_at.
DROP INDEX external_map_failed_updated_idx;
CREATE INDEX external_map_failed_at_idx ON external_map (failed_at) WHERE status = 'failed' AND put_aside_at IS NULL;
