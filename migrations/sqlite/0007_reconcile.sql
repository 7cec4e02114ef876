-- Reconciliation: at most one running run per service, who confirmed a run
-- that stopped at its safety valve, what each fix must find unchanged, and a
-- scratch table of the remote objects a run has seen.

-- At most one running reconciliation per service across every instance: a
-- second start (or a confirmation while another run is running) fails on
-- this index instead of both going ahead.
CREATE UNIQUE INDEX reconciliation_runs_one_running_key ON reconciliation_runs (service) WHERE status = 'running';
CREATE INDEX reconciliation_runs_running_heartbeat_idx ON reconciliation_runs (heartbeat_at) WHERE status = 'running';
ALTER TABLE reconciliation_runs ADD COLUMN confirmed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE reconciliation_runs ADD COLUMN confirmed_at DATETIME;

-- A fix is a compare-and-set: it applies only while the link still has the
-- external id the run saw (link_external_id). record_hash is the record's
-- content hash when the remote object already holds its desired state, so
-- an adoption can mark the link success without pushing it again.
ALTER TABLE discrepancies ADD COLUMN link_external_id TEXT NOT NULL DEFAULT '';
ALTER TABLE discrepancies ADD COLUMN record_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX discrepancies_run_status_idx ON discrepancies (run_id, status, id);

-- The provider's objects one run has listed, parsed to the record their key
-- names; compared with the records in batches, then deleted. The unique
-- index drops an object a provider lists twice while pages shift.
CREATE TABLE reconcile_seen (
    id           INTEGER PRIMARY KEY, -- a rowid: scratch needs no AUTOINCREMENT bookkeeping
    run_id       INTEGER NOT NULL REFERENCES reconciliation_runs (id) ON DELETE CASCADE,
    local_type   TEXT    NOT NULL,
    local_id     TEXT    NOT NULL,
    external_key TEXT    NOT NULL,
    external_id  TEXT    NOT NULL,
    fields       TEXT    NOT NULL
);
CREATE INDEX reconcile_seen_local_idx ON reconcile_seen (run_id, local_type, local_id);
CREATE UNIQUE INDEX reconcile_seen_external_id_key ON reconcile_seen (run_id, external_id);
