-- When each field of a record last changed, so that a provider's change is
-- older news only for the fields changed after it (sync/inbox/update.go).
-- Compared with the whole record's last change, a change of one field was
-- lost for good behind a later change of another: HubSpot sends one
-- property per event, and a phone changed at 10:00 applied after a first
-- name changed at 10:01 was dropped.
--
-- field_times: a JSON object of field → time (RFC 3339, UTC) of its last
-- change, a local write's or a provider's, for the fields changed since
-- field_times_since. A field it does not name last changed at or before
-- field_times_since; while that is NULL (no change since the record was
-- written first, or since this migration), at or before updated_at. The
-- first write that moves updated_at sets field_times_since to the
-- updated_at before it (models.UpsertRecords, SetRecordPayload,
-- TombstoneRecords), so no row is rewritten here.
ALTER TABLE records ADD COLUMN field_times TEXT NOT NULL DEFAULT '{}';
ALTER TABLE records ADD COLUMN field_times_since TIMESTAMPTZ;
