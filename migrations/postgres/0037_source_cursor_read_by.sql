-- What a source's cursor counts by, beside what it reads (0035): the outbox
-- table's id column (columns.id), or the type of a change query's records
-- (type). A position in one id column means nothing in another, and rows a
-- change query passed as one type are never read again as another: kept
-- while either changes under the same name, the cursor would skip rows
-- without a word. Empty for rows made before this migration: they take the
-- configured column or type on their first start.
ALTER TABLE source_cursors ADD COLUMN read_by TEXT NOT NULL DEFAULT '';
