-- Deletes: a record's tombstone, and a link's "deleted" status.

-- When the record was deleted through the API (or a source); NULL while it
-- lives. The row stays, with its last payload, so that its links can push
-- the delete and its page can say when; a write of the record clears it.
ALTER TABLE records ADD COLUMN deleted_at TIMESTAMPTZ;

-- A link whose record was deleted and whose object the provider no longer
-- holds (deleted, archived, or never created): terminal, like success.
ALTER TABLE external_map DROP CONSTRAINT external_map_status_check;
ALTER TABLE external_map ADD CONSTRAINT external_map_status_check
    CHECK (status IN ('new', 'processing', 'success', 'retry', 'failed', 'deleted'));

-- Reconciliation reports an object carrying a deleted record's key.
ALTER TABLE discrepancies DROP CONSTRAINT discrepancies_kind_check;
ALTER TABLE discrepancies ADD CONSTRAINT discrepancies_kind_check
    CHECK (kind IN ('missing_remote', 'unlinked_remote', 'duplicate_remote', 'field_mismatch', 'never_synced',
                    'failed_but_exists', 'deleted_but_present'));
