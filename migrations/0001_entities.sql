-- Entities: one memory each. Only a hash of the bearer token is kept.
CREATE TABLE entities (
    name        TEXT PRIMARY KEY,
    token_hash  TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL,
    rotated_at  TEXT
) WITHOUT ROWID;
