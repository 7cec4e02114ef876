-- Reconciliation actions and the record's timeline.

-- How many objects a run's listing met: Scanned counts them and the records
-- compared together, and a page says each. NULL for runs before this column.
ALTER TABLE reconciliation_runs ADD COLUMN listed BIGINT;
-- Who applied a dry run's open fixes, and when (through the safety valve).
ALTER TABLE reconciliation_runs ADD COLUMN applied_by TEXT NOT NULL DEFAULT '';
ALTER TABLE reconciliation_runs ADD COLUMN applied_at TIMESTAMPTZ;

-- A discrepancy waiting for a person that a person resolved: linked (an
-- unlinked object to a record), kept (one object of a duplicate) or
-- dismissed, with the note that says how and why. Its status stays
-- 'reported' (as on SQLite, whose CHECK of 0001 cannot change without rebuilding
-- the table); a non-empty resolution is what counts it as resolved.
ALTER TABLE discrepancies ADD COLUMN resolution TEXT NOT NULL DEFAULT '';
ALTER TABLE discrepancies ADD COLUMN resolution_note TEXT NOT NULL DEFAULT '';
ALTER TABLE discrepancies ADD COLUMN resolved_by TEXT NOT NULL DEFAULT '';
ALTER TABLE discrepancies ADD COLUMN resolved_at TIMESTAMPTZ;
-- The values of the fields that differ, ours and the provider's, as JSON:
-- [{"field": "title", "here": "…", "there": "…"}].
ALTER TABLE discrepancies ADD COLUMN differences TEXT NOT NULL DEFAULT '';

-- The link a webhook event's effect found, so that a record's page lists the
-- events about it with one index range per link. NULL for events before this
-- column and for events that named no link.
ALTER TABLE processed_events ADD COLUMN link_id BIGINT;
CREATE INDEX processed_events_link_idx ON processed_events (link_id, received_at) WHERE link_id IS NOT NULL;

-- A record's page reads the audit entries on its links and on itself by target.
CREATE INDEX audit_entries_target_at_idx ON audit_entries (target, at);
