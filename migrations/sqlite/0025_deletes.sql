-- Deletes: a record's tombstone, and a link's "deleted" status.

-- A link whose record was deleted and whose object the provider no longer
-- holds (deleted, archived, or never created) is 'deleted': terminal, like
-- success. Reconciliation reports an object carrying a deleted record's key
-- as 'deleted_but_present'. SQLite cannot alter a CHECK constraint, and
-- rebuilding external_map would rewrite it and every attempt (whose rows
-- cascade from it). A CHECK that only admits one more value changes nothing
-- on disk, and for such a change SQLite documents editing the table's
-- definition in sqlite_schema under writable_schema
-- (https://www.sqlite.org/lang_altertable.html#otheralter). RESET reloads
-- this connection's schema; the ALTER TABLE below bumps the schema cookie,
-- so that every other connection reloads it too.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (status IN (''new'', ''processing'', ''success'', ''retry'', ''failed''))',
    'CHECK (status IN (''new'', ''processing'', ''success'', ''retry'', ''failed'', ''deleted''))')
WHERE type = 'table' AND name = 'external_map';
UPDATE sqlite_schema SET sql = replace(sql, '''failed_but_exists'')', '''failed_but_exists'', ''deleted_but_present'')')
WHERE type = 'table' AND name = 'discrepancies';
PRAGMA writable_schema = RESET;

-- When the record was deleted through the API (or a source); NULL while it
-- lives. The row stays, with its last payload, so that its links can push
-- the delete and its page can say when; a write of the record clears it.
ALTER TABLE records ADD COLUMN deleted_at DATETIME;
