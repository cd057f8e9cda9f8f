-- Backups taken with `pps backup`, for `GET /v1/operator/backups`, /health and `pps
-- doctor`. What was written and where it can be checked; never a passphrase, a key or a
-- path: `archive` is the file's name only.
CREATE TABLE backups (
    id           INTEGER PRIMARY KEY,
    created_at   TEXT NOT NULL,
    entity       TEXT,                -- NULL: the whole data dir
    archive      TEXT NOT NULL,
    size         INTEGER NOT NULL,    -- bytes of the archive as written (encrypted, if it is)
    sha256       TEXT NOT NULL,       -- of the archive as written
    encrypted    TEXT,                -- NULL, 'passphrase' or 'recipient'
    events       INTEGER NOT NULL,
    files        INTEGER NOT NULL,
    entities     INTEGER NOT NULL
);

CREATE INDEX backups_by_time ON backups (created_at);
