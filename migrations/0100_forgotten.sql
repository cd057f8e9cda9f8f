-- What an entity forgot (engine/forgetting.py): one tombstone per forget, kept in layer 1
-- in place of the text. It says what was forgotten (kind and reference: an event's uid, a
-- fact's uuid, a word-photo's name as a hash), who asked, when and why, and the receipt of
-- what each layer removed. Never the text.
CREATE TABLE forgotten (
    id       INTEGER PRIMARY KEY,
    entity   TEXT NOT NULL REFERENCES entities(name),
    kind     TEXT NOT NULL CHECK (kind IN ('event', 'word_photo', 'fact')),
    ref      TEXT NOT NULL,
    why      TEXT,
    asked_by TEXT NOT NULL,
    at       TEXT NOT NULL,
    receipt  TEXT NOT NULL
);

CREATE INDEX forgotten_by_entity ON forgotten (entity, id);
