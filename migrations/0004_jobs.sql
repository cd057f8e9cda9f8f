-- The durable queue that feeds the derived layers (vectors, the graph). A job is
-- enqueued in the same transaction as the event that causes it, and leaves only as
-- done or dead (with its last error): nothing is dropped.
CREATE TABLE jobs (
    id                INTEGER PRIMARY KEY,
    entity            TEXT NOT NULL REFERENCES entities(name),
    kind              TEXT NOT NULL,
    key               TEXT NOT NULL,
    payload           TEXT NOT NULL DEFAULT '{}',
    state             TEXT NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'running', 'done', 'retry', 'waiting', 'dead')),
    attempts          INTEGER NOT NULL DEFAULT 0,
    next_attempt_at   TEXT,
    lease_owner       TEXT,
    lease_expires_at  TEXT,
    last_error        TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    UNIQUE (entity, kind, key)
);

-- Claiming scans only jobs that are not finished.
CREATE INDEX jobs_open ON jobs (kind, state, id) WHERE state NOT IN ('done', 'dead');
CREATE INDEX jobs_by_entity ON jobs (entity, state);

-- A paused (entity, kind) is not claimed: its jobs need a person (a key, a setting).
CREATE TABLE queue_pauses (
    entity  TEXT NOT NULL REFERENCES entities(name),
    kind    TEXT NOT NULL,
    reason  TEXT NOT NULL,
    since   TEXT NOT NULL,
    PRIMARY KEY (entity, kind)
) WITHOUT ROWID;
