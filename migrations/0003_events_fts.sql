-- Full-text index over event content, kept in step with events by triggers.
CREATE VIRTUAL TABLE events_fts USING fts5(
    content,
    content = 'events',
    content_rowid = 'id',
    tokenize = 'porter unicode61'
);

INSERT INTO events_fts (rowid, content) SELECT id, content FROM events;

CREATE TRIGGER events_fts_insert AFTER INSERT ON events BEGIN
    INSERT INTO events_fts (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER events_fts_delete AFTER DELETE ON events BEGIN
    INSERT INTO events_fts (events_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;

CREATE TRIGGER events_fts_update AFTER UPDATE OF content ON events BEGIN
    INSERT INTO events_fts (events_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO events_fts (rowid, content) VALUES (new.id, new.content);
END;
