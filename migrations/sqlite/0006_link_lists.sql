-- What the links list, the search box and the failed groups need.
ALTER TABLE external_map ADD COLUMN error_group TEXT NOT NULL DEFAULT '';
CREATE INDEX external_map_status_id_idx ON external_map (status, id);
CREATE INDEX external_map_service_status_id_idx ON external_map (external_service, status, id);
CREATE INDEX external_map_type_id_idx ON external_map (local_type, id);
CREATE INDEX external_map_local_id_idx ON external_map (local_id);
CREATE INDEX external_map_external_id_only_idx ON external_map (external_id);
CREATE INDEX external_map_external_key_only_idx ON external_map (external_key);
CREATE INDEX external_map_failed_group_idx ON external_map (error_group, id) WHERE status = 'failed';
