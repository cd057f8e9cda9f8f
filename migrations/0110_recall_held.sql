-- What each session's recalls gave it (engine/recall/held.py): an ambient recall with a
-- session leaves out what an earlier recall of that session injected, since the caller
-- holds it already; a startup recall (a clean context) starts the session's list again.
-- Each item is kept as a hash of its source, never its text or its name.
CREATE TABLE recall_held (
    entity      TEXT NOT NULL REFERENCES entities(name),
    session_id  TEXT NOT NULL,
    key         TEXT NOT NULL,
    at          TEXT NOT NULL,
    PRIMARY KEY (entity, session_id, key)
) WITHOUT ROWID;

CREATE INDEX recall_held_by_time ON recall_held (entity, at);
