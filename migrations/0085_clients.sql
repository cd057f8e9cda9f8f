-- Who called: each client an entity's token was used by (labelled by its X-PPS-Client
-- header, its MCP clientInfo name, its route), with counts, and a bounded log of recent
-- calls (route, read or write, status; no content).
CREATE TABLE clients (
    entity      TEXT NOT NULL REFERENCES entities(name),
    client      TEXT NOT NULL,
    first_at    TEXT NOT NULL,
    last_at     TEXT NOT NULL,
    last_status INTEGER NOT NULL,
    reads       INTEGER NOT NULL DEFAULT 0,
    writes      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (entity, client)
);

CREATE TABLE client_calls (
    id          INTEGER PRIMARY KEY,
    entity      TEXT NOT NULL REFERENCES entities(name),
    client      TEXT NOT NULL,
    at          TEXT NOT NULL,
    method      TEXT NOT NULL,
    route       TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('read', 'write')),
    status      INTEGER NOT NULL,
    latency_ms  REAL NOT NULL
);

CREATE INDEX client_calls_by_entity ON client_calls (entity, id);
