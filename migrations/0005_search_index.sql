-- Layer 2 and the longform tier: the search index. A cache: files on disk and layer-1
-- events are the truth, and `pps reindex` rebuilds all of this from them.

-- Each indexed file of an entity's home, as it was when indexed.
CREATE TABLE search_files (
    id          INTEGER PRIMARY KEY,
    entity      TEXT NOT NULL REFERENCES entities(name),
    path        TEXT NOT NULL,              -- relative to the home, '/'-separated
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    indexed_at  TEXT NOT NULL,
    UNIQUE (entity, path)
);

-- What search ranks: a chunk of a file, or one raw turn (an event).
CREATE TABLE search_chunks (
    id            INTEGER PRIMARY KEY,
    entity        TEXT NOT NULL REFERENCES entities(name),
    tier          TEXT NOT NULL CHECK (tier IN ('shortform', 'longform', 'domain')),
    kind          TEXT NOT NULL,            -- anchor, fragment, memory, document, journal, turn
    file_id       INTEGER REFERENCES search_files(id) ON DELETE CASCADE,
    event_id      INTEGER UNIQUE REFERENCES events(id) ON DELETE CASCADE,
    start_line    INTEGER,
    end_line      INTEGER,
    category      TEXT,
    tags          TEXT NOT NULL DEFAULT '[]', -- JSON list of lowercase tags
    date          TEXT,                       -- stored timestamp format; a file's date is its midnight
    channel       TEXT,
    growth        INTEGER NOT NULL DEFAULT 0,
    superseded    INTEGER NOT NULL DEFAULT 0,
    content_hash  TEXT NOT NULL,              -- of the text shown: results are deduplicated by it
    embed_hash    TEXT NOT NULL,              -- of the text embedded: a vector is reused when equal
    body          TEXT NOT NULL,              -- ranked: the chunk, or the turn as "[date] author: text"
    context       TEXT NOT NULL DEFAULT '',   -- ranked at half weight: title and headings, or neighbouring turns
    CHECK ((file_id IS NULL) <> (event_id IS NULL))
);

CREATE INDEX search_chunks_by_file ON search_chunks (file_id) WHERE file_id IS NOT NULL;
CREATE INDEX search_chunks_by_entity ON search_chunks (entity, tier, date);
CREATE INDEX search_chunks_by_embed_hash ON search_chunks (entity, embed_hash);

CREATE VIRTUAL TABLE search_fts USING fts5(
    body,
    context,
    content = 'search_chunks',
    content_rowid = 'id',
    tokenize = 'porter unicode61'
);

-- A chunk's own words count twice as much as its context's.
INSERT INTO search_fts (search_fts, rank) VALUES ('rank', 'bm25(2.0, 1.0)');

CREATE TRIGGER search_fts_insert AFTER INSERT ON search_chunks BEGIN
    INSERT INTO search_fts (rowid, body, context) VALUES (new.id, new.body, new.context);
END;

CREATE TRIGGER search_fts_delete AFTER DELETE ON search_chunks BEGIN
    INSERT INTO search_fts (search_fts, rowid, body, context)
        VALUES ('delete', old.id, old.body, old.context);
END;

CREATE TRIGGER search_fts_update AFTER UPDATE OF body, context ON search_chunks BEGIN
    INSERT INTO search_fts (search_fts, rowid, body, context)
        VALUES ('delete', old.id, old.body, old.context);
    INSERT INTO search_fts (rowid, body, context) VALUES (new.id, new.body, new.context);
END;

-- One vector per chunk, float32, tagged with the model that made it; search ignores
-- vectors of any other model.
CREATE TABLE search_vectors (
    chunk_id  INTEGER PRIMARY KEY REFERENCES search_chunks(id) ON DELETE CASCADE,
    entity    TEXT NOT NULL,
    model     TEXT NOT NULL,
    vector    BLOB NOT NULL
);

CREATE INDEX search_vectors_by_entity ON search_vectors (entity, model);

-- Bumped by every change to an entity's vectors, so a process holding them in memory
-- notices changes made by another process.
CREATE TABLE search_generations (
    entity      TEXT PRIMARY KEY REFERENCES entities(name),
    generation  INTEGER NOT NULL
) WITHOUT ROWID;
