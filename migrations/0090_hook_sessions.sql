-- Where the agent hosts' hooks are in each session (engine/capture/hook_sessions.py): how
-- far a session's transcript has been read, how often each text has been seen in it (a
-- turn's uid counts them), which hook calls were already handled (a call sent again
-- from a client's spool changes nothing), and a Letta folder's recent conversations.
-- Kept by the service, so the hook clients keep next to nothing.
CREATE TABLE hook_sessions (
    entity      TEXT NOT NULL REFERENCES entities(name),
    host        TEXT NOT NULL,
    key         TEXT NOT NULL,
    state       TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (entity, host, key)
);
