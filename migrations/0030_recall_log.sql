-- The recall log, when switched on (PPS_RECALL_LOG): what each ambient_recall surfaced,
-- with its sources, scores and signals and each layer's latency, for audits.
CREATE TABLE recall_log (
    id          INTEGER PRIMARY KEY,
    entity      TEXT NOT NULL REFERENCES entities(name),
    context     TEXT NOT NULL,
    channel     TEXT,
    latency_ms  REAL NOT NULL,
    items       TEXT NOT NULL,  -- JSON: layer, score, source, signals of each item
    manifest    TEXT NOT NULL,  -- JSON: per layer status, count, chars, latency
    created_at  TEXT NOT NULL
);

CREATE INDEX recall_log_by_entity ON recall_log (entity, id);
