-- A run keeps each listed object once per (run, local type, provider id):
-- one endpoint's objects are one type's, and two endpoints may use the same
-- ids (HubSpot's contacts and companies both count from 1). Keyed by the id
-- alone, a company listed first dropped the contact of the same id, whose
-- record then looked changed.
DROP INDEX reconcile_seen_external_id_key;
CREATE UNIQUE INDEX reconcile_seen_type_external_id_key ON reconcile_seen (run_id, local_type, external_id);
