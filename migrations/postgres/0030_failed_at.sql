-- When a link failed: the time it last entered failed, which is what the
-- overview's Newest failures sorts and shows. It sorted by updated_at, and
-- a write that leaves a failed link failed (a webhook about its object, a
-- note) moved the link to the top as "just now". A trigger sets it, as
-- 0020's does put_aside_at, so that no path that fails a link can forget
-- it, to the updated_at the failing write gives (the engine's clock, not
-- the database's). Its WHEN keeps it off every other status change.
ALTER TABLE external_map ADD COLUMN failed_at TIMESTAMPTZ;
UPDATE external_map SET failed_at = updated_at WHERE status = 'failed';

CREATE FUNCTION external_map_failed_at() RETURNS trigger AS $$
BEGIN
    NEW.failed_at := NEW.updated_at;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER external_map_fail BEFORE UPDATE OF status ON external_map
FOR EACH ROW WHEN (NEW.status = 'failed' AND OLD.status <> 'failed')
EXECUTE FUNCTION external_map_failed_at();
CREATE TRIGGER external_map_insert_failed BEFORE INSERT ON external_map
FOR EACH ROW WHEN (NEW.status = 'failed')
EXECUTE FUNCTION external_map_failed_at();

-- Newest failures reads this index instead of one on updated_at. With
-- updated_at in no index any more, a write that changes only columns no
-- index holds (a webhook's note of what the provider holds, on a synced
-- link) can be a HOT update, which writes none of the table's indexes,
-- when the row's page has room: fillfactor keeps a tenth of each new page
-- for that.
DROP INDEX external_map_failed_updated_idx;
CREATE INDEX external_map_failed_at_idx ON external_map (failed_at) WHERE status = 'failed' AND put_aside_at IS NULL;
ALTER TABLE external_map SET (fillfactor = 90);
