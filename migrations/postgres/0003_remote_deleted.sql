-- A deal.deleted (or any "the remote object is gone") webhook marks the link;
-- it is re-created only after an operator confirms.
ALTER TABLE external_map ADD COLUMN remote_deleted_at TIMESTAMPTZ;
