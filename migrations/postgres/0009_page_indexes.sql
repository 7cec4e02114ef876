-- The failed page counts failed links per error group (models.FailedGroups)
-- and a group's page lists its links newest first (models.FailedIDs). Both
-- bind the status as a parameter, which a generic plan cannot match to the
-- partial index of 0006 (WHERE status = 'failed'); and even planned for
-- 'failed', the count read every failed link's row through the (status,
-- updated_at) index: over 300 ms at 70,000 failed links in a million.
-- This index covers both queries: an index-only range scan in group order
-- (once vacuum has marked the pages all-visible, as autovacuum does).
CREATE INDEX external_map_status_group_id_idx ON external_map (status, error_group, id);
-- Every query the partial index served, this one serves too.
DROP INDEX external_map_failed_group_idx;
