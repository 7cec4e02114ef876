-- Put aside: a person acknowledges a failed link (a known-bad record) with a
-- reason, so that it leaves the Failed list without being retried or lost.
-- It stays a failed link; the columns say who put it aside, when and why.
ALTER TABLE external_map ADD COLUMN put_aside_at TIMESTAMPTZ;
ALTER TABLE external_map ADD COLUMN put_aside_by TEXT NOT NULL DEFAULT '';
ALTER TABLE external_map ADD COLUMN put_aside_reason TEXT NOT NULL DEFAULT '';

-- A link that leaves failed (a retry, Sync now, a new payload, a webhook, a
-- reconciliation fix) is no longer put aside: if it fails again, it shows on
-- Failed again. A trigger, rather than each of those statements, so that no
-- path that moves a link can forget it. Its WHEN keeps it off the outbox's
-- own status changes: only a put-aside link leaving failed runs it.
CREATE FUNCTION external_map_leave_aside() RETURNS trigger AS $$
BEGIN
    NEW.put_aside_at := NULL;
    NEW.put_aside_by := '';
    NEW.put_aside_reason := '';
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER external_map_leave_aside BEFORE UPDATE OF status ON external_map
FOR EACH ROW WHEN (NEW.status <> 'failed' AND NEW.put_aside_at IS NOT NULL)
EXECUTE FUNCTION external_map_leave_aside();

-- The failed-link indexes (0012) split in two: the links on Failed, and the
-- links put aside, each read through its own partial index.
DROP INDEX external_map_failed_updated_idx;
DROP INDEX external_map_failed_group_id_idx;
CREATE INDEX external_map_failed_updated_idx ON external_map (updated_at) WHERE status = 'failed' AND put_aside_at IS NULL;
CREATE INDEX external_map_failed_group_id_idx ON external_map (error_group, id) WHERE status = 'failed' AND put_aside_at IS NULL;
CREATE INDEX external_map_aside_group_id_idx ON external_map (error_group, id) WHERE status = 'failed' AND put_aside_at IS NOT NULL;

-- The counted groups gain which side they count. The table holds only
-- counts, recounted every few seconds: made anew rather than altered.
DROP TABLE stat_failed_groups;
CREATE TABLE stat_failed_groups (
    error_group TEXT     NOT NULL,
    aside       BOOLEAN  NOT NULL DEFAULT FALSE,
    n           BIGINT   NOT NULL,
    example_id  BIGINT   NOT NULL,
    counted_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (error_group, aside)
);

-- The key shown on a link's page finds the link on the Links page. It is
-- written when a link is made and when an operator re-creates one.
CREATE INDEX external_map_idempotency_key_idx ON external_map (idempotency_key);

-- The users page shows each person's last sign-in.
ALTER TABLE users ADD COLUMN last_sign_in_at TIMESTAMPTZ;
