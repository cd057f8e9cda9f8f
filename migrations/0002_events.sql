-- Layer 1, raw capture: every event from every channel. The source of truth.
-- Timestamps are UTC ISO-8601 with microseconds ("2026-01-04T12:00:00.000000Z"),
-- so text order is time order.
CREATE TABLE events (
    id           INTEGER PRIMARY KEY,
    entity       TEXT NOT NULL REFERENCES entities(name),
    event_uid    TEXT NOT NULL,
    channel      TEXT NOT NULL,
    event_type   TEXT NOT NULL,
    author       TEXT,
    role         TEXT,
    content      TEXT NOT NULL,
    metadata     TEXT NOT NULL DEFAULT '{}',
    session_id   TEXT,
    created_at   TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    UNIQUE (entity, event_uid)
);

CREATE INDEX events_by_time ON events (entity, created_at, id);
CREATE INDEX events_by_channel ON events (entity, channel, created_at, id);
CREATE INDEX events_by_session ON events (entity, session_id, created_at, id)
    WHERE session_id IS NOT NULL;
