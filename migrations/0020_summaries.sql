-- Layer 4, message summaries: each covers a range of an entity's event ids (in some
-- channels, or all), and marks those events as summarized.
CREATE TABLE summaries (
    id            INTEGER PRIMARY KEY,
    entity        TEXT NOT NULL REFERENCES entities(name),
    summary_text  TEXT NOT NULL,
    summary_type  TEXT NOT NULL,
    start_id      INTEGER NOT NULL,
    end_id        INTEGER NOT NULL,
    channels      TEXT,            -- JSON list of channels; NULL: every channel
    event_count   INTEGER NOT NULL,
    first_at      TEXT,            -- created_at of the first and last event covered
    last_at       TEXT,
    created_at    TEXT NOT NULL,
    CHECK (start_id <= end_id)
);

CREATE INDEX summaries_by_range ON summaries (entity, start_id, end_id);
CREATE INDEX summaries_by_time ON summaries (entity, created_at);

CREATE VIRTUAL TABLE summaries_fts USING fts5(
    summary_text,
    content = 'summaries',
    content_rowid = 'id',
    tokenize = 'porter unicode61'
);

CREATE TRIGGER summaries_fts_insert AFTER INSERT ON summaries BEGIN
    INSERT INTO summaries_fts (rowid, summary_text) VALUES (new.id, new.summary_text);
END;

CREATE TRIGGER summaries_fts_delete AFTER DELETE ON summaries BEGIN
    INSERT INTO summaries_fts (summaries_fts, rowid, summary_text)
    VALUES ('delete', old.id, old.summary_text);
END;
