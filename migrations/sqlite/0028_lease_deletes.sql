-- What a link's send under lease is: a delete (its record was deleted when
-- it was claimed) or a write. A rescuer hands a link whose worker stopped
-- back by this, not by the record's state at the rescue: a record written
-- again, or deleted, since the claim does not change what was sent. Links
-- under lease at the upgrade get the record's state now, the best known.
ALTER TABLE external_map ADD COLUMN lease_deletes BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE external_map SET lease_deletes = TRUE WHERE status = 'processing' AND EXISTS (SELECT 1 FROM records r
	WHERE r.local_type = external_map.local_type AND r.local_id = external_map.local_id AND r.deleted_at IS NOT NULL);
