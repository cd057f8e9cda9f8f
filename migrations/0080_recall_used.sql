-- Was it used: each item of a logged recall, marked used or not when the assistant's
-- reply after it is captured (engine/recall/used.py). The recall log now keeps the
-- caller's session, which is how a reply finds the recalls it answers.

ALTER TABLE recall_log ADD COLUMN session_id TEXT;

CREATE INDEX recall_log_by_session ON recall_log (entity, session_id, channel, id);

CREATE TABLE recall_used (
    id              INTEGER PRIMARY KEY,
    entity          TEXT NOT NULL REFERENCES entities(name),
    log_id          INTEGER NOT NULL REFERENCES recall_log(id) ON DELETE CASCADE,
    rank            INTEGER NOT NULL,
    layer           TEXT NOT NULL,
    item_key        TEXT NOT NULL,
    used            INTEGER NOT NULL CHECK (used IN (0, 1)),
    shared          INTEGER NOT NULL,  -- distinctive words shared with the reply
    reply_event_id  INTEGER NOT NULL,
    marked_at       TEXT NOT NULL,
    UNIQUE (log_id, rank)
);

CREATE INDEX recall_used_by_entity ON recall_used (entity, log_id);
