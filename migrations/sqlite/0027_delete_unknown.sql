-- A delete of ours whose outcome is unknown (its answer was lost, or its
-- worker stopped mid-send): the object may be gone at the provider. An
-- update that then finds no object creates the record anew; after any
-- other unknown outcome a missing object was deleted by somebody else, and
-- the link fails for a person to decide. Links left by an earlier version
-- in the state that used to mean this keep their old behaviour.
ALTER TABLE external_map ADD COLUMN delete_unknown BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE external_map SET delete_unknown = TRUE WHERE needs_lookup AND external_id <> '';

-- A claim no longer writes an in_progress row (the lease marks a link being
-- sent); the rows earlier versions' workers held would only block Sync now
-- until they expired.
DELETE FROM in_progress WHERE holder <> 'request';
