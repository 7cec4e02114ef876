-- What a source's cursor was made for: the mode (table: an outbox table,
-- query: a change query) and what it reads (the table's name, or the
-- query's text). A cursor's position means nothing for another table or
-- query: kept while the configuration changes under the same name, it
-- would skip the new table's rows below it. A start whose configuration no
-- longer matches a cursor that has moved stops, naming the setting. Empty
-- for rows made before this migration: they take the configured identity
-- on their first start. Not the DSN: hosts and passwords change
-- legitimately.
ALTER TABLE source_cursors ADD COLUMN read_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE source_cursors ADD COLUMN read_from TEXT NOT NULL DEFAULT '';

-- How many rows a change query gives with an empty (NULL) updated_at: they
-- have no place in the (updated_at, id) order and are not read until the
-- application sets it. Counted apart so that the services page and the log
-- say how many are left out, and why.
ALTER TABLE source_cursors ADD COLUMN untimed BIGINT NOT NULL DEFAULT 0;
