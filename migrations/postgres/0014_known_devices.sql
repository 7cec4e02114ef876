-- A browser that has signed in to an account before carries a device cookie
-- (OWASP's defence against online guessing): its sign-ins get password
-- checks of their own, so strangers guessing at other accounts cannot make it
-- wait. Keyed by the SHA-256 of the cookie value, as sessions are.
CREATE TABLE known_devices (
    id         TEXT        PRIMARY KEY,
    user_id    BIGINT      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX known_devices_user_id_idx ON known_devices (user_id, expires_at);
