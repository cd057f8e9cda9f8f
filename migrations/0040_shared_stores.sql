-- Shared stores: one memory many entities search and write, joined only by an
-- operator's act. A store's files live in `<data dir>/shared/<store>/` and are indexed
-- under the key `shared:<store>`, which no entity name can take (names have no ':');
-- that key has a row in `entities` whose token hash is no SHA-256, so no token is it.

CREATE TABLE shared_stores (
    name          TEXT PRIMARY KEY,
    members_edit  INTEGER NOT NULL DEFAULT 0,  -- 1: members may change each other's memories
    created_at    TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE shared_members (
    store     TEXT NOT NULL REFERENCES shared_stores(name) ON DELETE CASCADE,
    entity    TEXT NOT NULL REFERENCES entities(name),
    added_at  TEXT NOT NULL,
    PRIMARY KEY (store, entity)
) WITHOUT ROWID;

CREATE INDEX shared_members_by_entity ON shared_members (entity);

-- One row per memory of a store: who wrote it, recorded from the token (an entity's
-- name, or 'operator' for the folder indexer), never from what a caller says.
CREATE TABLE shared_memories (
    store        TEXT NOT NULL REFERENCES shared_stores(name) ON DELETE CASCADE,
    id           TEXT NOT NULL,        -- its fragment's path inside the store's fragments folder
    agent        TEXT NOT NULL,        -- the label a caller may set (default: its own name)
    written_by   TEXT NOT NULL,
    source       TEXT NOT NULL,
    moment       TEXT NOT NULL,        -- the memory's timestamp (stored format)
    origin       TEXT,                 -- the indexer's file, relative to the folder it indexed
    origin_hash  TEXT,                 -- that file's SHA-256 when it was last written here
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    updated_by   TEXT NOT NULL,
    PRIMARY KEY (store, id)
) WITHOUT ROWID;

CREATE INDEX shared_memories_by_agent ON shared_memories (store, agent, moment);

-- The operator's token (one at a time), hashed like entity tokens.
CREATE TABLE operator_tokens (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    token_hash  TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
