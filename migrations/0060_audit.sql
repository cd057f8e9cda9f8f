-- The retrieval audit: a person's judgment of each item a logged recall surfaced
-- (relevant to its context or not), who judged it and when. One judgment per item of a
-- recall; judging again replaces it. The item is named by its identity (item_key: the
-- event, the file and its lines, the fact, ...), its rank and layer as the recall had them.
CREATE TABLE audit_judgments (
    id          INTEGER PRIMARY KEY,
    entity      TEXT NOT NULL REFERENCES entities(name),
    log_id      INTEGER NOT NULL REFERENCES recall_log(id) ON DELETE CASCADE,
    item_key    TEXT NOT NULL,
    rank        INTEGER NOT NULL,
    layer       TEXT NOT NULL,
    relevant    INTEGER NOT NULL CHECK (relevant IN (0, 1)),
    judged_by   TEXT NOT NULL,
    judged_at   TEXT NOT NULL,
    UNIQUE (log_id, item_key)
);

CREATE INDEX audit_judgments_by_entity ON audit_judgments (entity, log_id);
