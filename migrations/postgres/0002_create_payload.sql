-- The body of a create is frozen at its first attempt, so that a retry with
-- the same Idempotency-Key sends the same body (a provider refuses a reused
-- key with another body). Cleared when the create succeeds.
ALTER TABLE external_map ADD COLUMN create_payload TEXT NOT NULL DEFAULT '';
