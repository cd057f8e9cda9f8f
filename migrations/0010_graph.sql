-- Layer 3 ingestion: turns grouped into episodes (engine.episodes), each fed to the
-- graph by one queue job. The grouping is decided once, when a window closes, and
-- recorded here, so a retry, a reclaimed job or a replay adds the same episode again
-- (its uuid is derived from the entity and the event uids it covers).

-- Events not yet in an episode, by session window (session_id, else channel).
CREATE TABLE graph_pending (
    event_id     INTEGER PRIMARY KEY REFERENCES events(id),
    entity       TEXT NOT NULL,
    session_key  TEXT NOT NULL
);

CREATE INDEX graph_pending_by_window ON graph_pending (entity, session_key, event_id);

-- Events stored before this migration are grouped like new ones.
INSERT INTO graph_pending (event_id, entity, session_key)
    SELECT id, entity, COALESCE('session:' || session_id, 'channel:' || channel) FROM events;

CREATE TABLE episodes (
    uuid         TEXT PRIMARY KEY,
    entity       TEXT NOT NULL REFERENCES entities(name),
    session_key  TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('turns', 'note', 'triplet')),
    turns        INTEGER NOT NULL,
    chars        INTEGER NOT NULL,
    truncated    INTEGER NOT NULL DEFAULT 0,
    started_at   TEXT NOT NULL,
    ended_at     TEXT NOT NULL,
    closed_at    TEXT NOT NULL,
    ingested_at  TEXT,
    deleted_at   TEXT     -- removed from the graph by texture_delete: a replay skips it
) WITHOUT ROWID;

CREATE INDEX episodes_by_entity ON episodes (entity, started_at);

-- Which events an episode covers, in order: how a fact is traced to its events.
CREATE TABLE episode_events (
    episode_uuid  TEXT NOT NULL REFERENCES episodes(uuid),
    position      INTEGER NOT NULL,
    event_id      INTEGER NOT NULL UNIQUE REFERENCES events(id),
    PRIMARY KEY (episode_uuid, position)
) WITHOUT ROWID;

-- LLM calls and tokens spent per entity per UTC day (the daily budget).
CREATE TABLE graph_usage (
    entity  TEXT NOT NULL REFERENCES entities(name),
    day     TEXT NOT NULL,
    calls   INTEGER NOT NULL DEFAULT 0,
    tokens  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (entity, day)
) WITHOUT ROWID;

-- Replays of the log into the graph: each one's jobs carry its number in their key.
CREATE TABLE graph_replays (
    id          INTEGER PRIMARY KEY,
    entity      TEXT NOT NULL REFERENCES entities(name),
    episodes    INTEGER NOT NULL,
    started_at  TEXT NOT NULL
);
