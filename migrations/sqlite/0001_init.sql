-- Initial schema (SQLite). Timestamps are stored as UTC text by the driver.

CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    email         TEXT    NOT NULL,
    name          TEXT    NOT NULL DEFAULT '',
    role          TEXT    NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    password_hash TEXT    NOT NULL,
    disabled_at   DATETIME,
    created_at    DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON users (email);

-- Sessions are keyed by the SHA-256 of the cookie value, so a copy of this table
-- cannot be replayed as cookies.
CREATE TABLE sessions (
    id           TEXT     PRIMARY KEY,
    user_id      INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   DATETIME NOT NULL,
    last_seen_at DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL,
    ip           TEXT     NOT NULL DEFAULT '',
    user_agent   TEXT     NOT NULL DEFAULT ''
);
CREATE INDEX sessions_user_id_idx ON sessions (user_id);
CREATE INDEX sessions_expires_at_idx ON sessions (expires_at);

CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT     NOT NULL,
    token_hash   TEXT     NOT NULL,
    created_by   TEXT     NOT NULL DEFAULT '',
    created_at   DATETIME NOT NULL,
    last_used_at DATETIME,
    revoked_at   DATETIME
);
CREATE UNIQUE INDEX api_tokens_name_key ON api_tokens (name);
CREATE UNIQUE INDEX api_tokens_token_hash_key ON api_tokens (token_hash);

-- Append-only: the application never updates or deletes audit rows.
CREATE TABLE audit_entries (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      DATETIME NOT NULL,
    actor   TEXT     NOT NULL,
    user_id INTEGER,
    action  TEXT     NOT NULL,
    target  TEXT     NOT NULL DEFAULT '',
    outcome TEXT     NOT NULL,
    ip      TEXT     NOT NULL DEFAULT '',
    detail  TEXT     NOT NULL DEFAULT ''
);
CREATE INDEX audit_entries_at_idx ON audit_entries (at);
CREATE INDEX audit_entries_actor_at_idx ON audit_entries (actor, at);
-- Login throttling counts recent failures per account and per IP from here.
CREATE INDEX audit_entries_action_target_at_idx ON audit_entries (action, outcome, target, at);
CREATE INDEX audit_entries_action_ip_at_idx ON audit_entries (action, outcome, ip, at);

CREATE TABLE records (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    local_type   TEXT     NOT NULL,
    local_id     TEXT     NOT NULL,
    payload      TEXT     NOT NULL,
    content_hash TEXT     NOT NULL,
    created_at   DATETIME NOT NULL,
    updated_at   DATETIME NOT NULL
);
CREATE UNIQUE INDEX records_local_key ON records (local_type, local_id);

-- One link per (record, external service). The unique index is what stops two
-- workers or two API calls from creating a second link for the same pair.
CREATE TABLE external_map (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    local_type       TEXT     NOT NULL,
    local_id         TEXT     NOT NULL,
    external_service TEXT     NOT NULL,
    external_key     TEXT     NOT NULL,
    external_id      TEXT     NOT NULL DEFAULT '',
    status           TEXT     NOT NULL CHECK (status IN ('new', 'processing', 'success', 'retry', 'failed')),
    attempts         INTEGER  NOT NULL DEFAULT 0,
    next_attempt_at  DATETIME NOT NULL,
    lease_owner      TEXT     NOT NULL DEFAULT '',
    locked_until     DATETIME,
    needs_lookup     BOOLEAN  NOT NULL DEFAULT FALSE,
    idempotency_key  TEXT     NOT NULL DEFAULT '',
    last_error       TEXT     NOT NULL DEFAULT '',
    last_http_code   INTEGER  NOT NULL DEFAULT 0,
    pushed_hash      TEXT     NOT NULL DEFAULT '',
    created_at       DATETIME NOT NULL,
    updated_at       DATETIME NOT NULL
);
CREATE UNIQUE INDEX external_map_local_service_key ON external_map (local_type, local_id, external_service);
CREATE INDEX external_map_status_service_updated_idx ON external_map (status, external_service, updated_at);
CREATE INDEX external_map_service_updated_idx ON external_map (external_service, updated_at);
CREATE INDEX external_map_updated_idx ON external_map (updated_at, id);
CREATE INDEX external_map_due_idx ON external_map (next_attempt_at) WHERE status IN ('new', 'retry');
CREATE INDEX external_map_lease_idx ON external_map (locked_until) WHERE status = 'processing';
CREATE INDEX external_map_external_id_idx ON external_map (external_service, external_id);
CREATE INDEX external_map_external_key_idx ON external_map (external_service, external_key);

CREATE TABLE attempts (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    link_id          INTEGER  NOT NULL REFERENCES external_map (id) ON DELETE CASCADE,
    number           INTEGER  NOT NULL,
    operation        TEXT     NOT NULL,
    idempotency_key  TEXT     NOT NULL DEFAULT '',
    http_code        INTEGER  NOT NULL DEFAULT 0,
    duration_ms      INTEGER  NOT NULL DEFAULT 0,
    outcome          TEXT     NOT NULL CHECK (outcome IN ('ok', 'temporary', 'permanent', 'ambiguous')),
    external_id      TEXT     NOT NULL DEFAULT '',
    error            TEXT     NOT NULL DEFAULT '',
    request_excerpt  TEXT     NOT NULL DEFAULT '',
    response_excerpt TEXT     NOT NULL DEFAULT '',
    worker           TEXT     NOT NULL DEFAULT '',
    created_at       DATETIME NOT NULL
);
CREATE INDEX attempts_link_created_idx ON attempts (link_id, created_at);
CREATE INDEX attempts_created_idx ON attempts (created_at);

-- At most one sync in progress per (service, type, id), shared by every
-- instance: the primary key is the lock, expires_at lets a dead holder's row be taken over.
CREATE TABLE in_progress (
    external_service TEXT     NOT NULL,
    local_type       TEXT     NOT NULL,
    local_id         TEXT     NOT NULL,
    holder           TEXT     NOT NULL,
    started_by       TEXT     NOT NULL DEFAULT '',
    started_at       DATETIME NOT NULL,
    expires_at       DATETIME NOT NULL,
    PRIMARY KEY (external_service, local_type, local_id)
);
CREATE INDEX in_progress_expires_idx ON in_progress (expires_at);

-- Every accepted webhook. The primary key makes a re-delivery a no-op insert.
CREATE TABLE processed_events (
    provider          TEXT     NOT NULL,
    event_id          TEXT     NOT NULL,
    event_type        TEXT     NOT NULL DEFAULT '',
    received_at       DATETIME NOT NULL,
    outcome           TEXT     NOT NULL,
    error             TEXT     NOT NULL DEFAULT '',
    duplicates        INTEGER  NOT NULL DEFAULT 0,
    last_duplicate_at DATETIME,
    payload           TEXT     NOT NULL DEFAULT '',
    PRIMARY KEY (provider, event_id)
);
CREATE INDEX processed_events_received_idx ON processed_events (received_at);
CREATE INDEX processed_events_provider_received_idx ON processed_events (provider, received_at);

CREATE TABLE reconciliation_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    service      TEXT     NOT NULL,
    status       TEXT     NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'interrupted', 'awaiting_confirmation')),
    dry_run      BOOLEAN  NOT NULL DEFAULT FALSE,
    triggered_by TEXT     NOT NULL DEFAULT '',
    owner        TEXT     NOT NULL DEFAULT '',
    heartbeat_at DATETIME,
    expected     INTEGER  NOT NULL DEFAULT 0,
    scanned      INTEGER  NOT NULL DEFAULT 0,
    fixed        INTEGER  NOT NULL DEFAULT 0,
    error        TEXT     NOT NULL DEFAULT '',
    started_at   DATETIME NOT NULL,
    finished_at  DATETIME
);
CREATE INDEX reconciliation_runs_service_started_idx ON reconciliation_runs (service, started_at);
CREATE INDEX reconciliation_runs_started_idx ON reconciliation_runs (started_at);

CREATE TABLE discrepancies (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       INTEGER  NOT NULL REFERENCES reconciliation_runs (id) ON DELETE CASCADE,
    kind         TEXT     NOT NULL CHECK (kind IN ('missing_remote', 'unlinked_remote', 'duplicate_remote', 'field_mismatch', 'never_synced', 'failed_but_exists')),
    status       TEXT     NOT NULL CHECK (status IN ('open', 'fixed', 'reported')),
    local_type   TEXT     NOT NULL DEFAULT '',
    local_id     TEXT     NOT NULL DEFAULT '',
    external_key TEXT     NOT NULL DEFAULT '',
    external_ids TEXT     NOT NULL DEFAULT '',
    link_id      INTEGER,
    detail       TEXT     NOT NULL DEFAULT '',
    created_at   DATETIME NOT NULL
);
CREATE INDEX discrepancies_run_kind_idx ON discrepancies (run_id, kind, id);
