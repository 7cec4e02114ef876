-- The newest failures and the failed groups read failed links only. Indexed
-- by status, every link took an entry in both, rewritten at each of its
-- status changes: twice per sync. Partial indexes on failed links hold a
-- few percent of the links, and change only when a link fails or leaves
-- failed. The queries say status = 'failed' as a literal, so that the
-- planners can prove the partial indexes apply.
DROP INDEX external_map_status_updated_idx;
DROP INDEX external_map_status_group_id_idx;
CREATE INDEX external_map_failed_updated_idx ON external_map (updated_at) WHERE status = 'failed';
CREATE INDEX external_map_failed_group_id_idx ON external_map (error_group, id) WHERE status = 'failed';
