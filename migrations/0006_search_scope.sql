-- Keyword search ranks only the postings of the entity and tiers it was asked about.
--
-- The FTS5 index holds every entity's chunks, and ranking happens before a join can
-- filter them: a search of an entity's few word-photos used to rank the postings of
-- every turn of every entity that shares a word. Each chunk now also carries its scope,
-- one token naming its entity (hex) and tier, so a query can say
-- `(words) AND scope:(token OR token)` and FTS5 intersects with the short list first.
-- The scope column weighs nothing in bm25.

ALTER TABLE search_chunks ADD COLUMN scope TEXT
    GENERATED ALWAYS AS (hex(entity) || 'x' || tier) VIRTUAL;

DROP TRIGGER search_fts_insert;
DROP TRIGGER search_fts_delete;
DROP TRIGGER search_fts_update;
DROP TABLE search_fts;

CREATE VIRTUAL TABLE search_fts USING fts5(
    body,
    context,
    scope,
    content = 'search_chunks',
    content_rowid = 'id',
    tokenize = 'porter unicode61'
);

-- A chunk's own words count twice as much as its context's; its scope not at all.
INSERT INTO search_fts (search_fts, rank) VALUES ('rank', 'bm25(2.0, 1.0, 0.0)');

CREATE TRIGGER search_fts_insert AFTER INSERT ON search_chunks BEGIN
    INSERT INTO search_fts (rowid, body, context, scope)
        VALUES (new.id, new.body, new.context, new.scope);
END;

CREATE TRIGGER search_fts_delete AFTER DELETE ON search_chunks BEGIN
    INSERT INTO search_fts (search_fts, rowid, body, context, scope)
        VALUES ('delete', old.id, old.body, old.context, old.scope);
END;

CREATE TRIGGER search_fts_update AFTER UPDATE OF body, context ON search_chunks BEGIN
    INSERT INTO search_fts (search_fts, rowid, body, context, scope)
        VALUES ('delete', old.id, old.body, old.context, old.scope);
    INSERT INTO search_fts (rowid, body, context, scope)
        VALUES (new.id, new.body, new.context, new.scope);
END;

INSERT INTO search_fts (search_fts) VALUES ('rebuild');
