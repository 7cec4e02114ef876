-- Three indexes of the first schema that no query reads any more: the links
-- list pages by id, the overview reads maintained counts, and the newest
-- failures use (status, updated_at). Every claim and every result rewrites
-- a link's status and updated_at, so each of them cost every send two index
-- updates for nothing.
DROP INDEX external_map_status_service_updated_idx;
DROP INDEX external_map_service_updated_idx;
DROP INDEX external_map_updated_idx;
