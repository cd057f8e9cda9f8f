-- Markers are events, not turns (engine/capture/markers.py): session_start, session_end,
-- pre_compact (the Claude Code hooks, and the seed daemons' session_start) and delete
-- (the Discord adapter). Raw capture keeps them; from now on they get no search row.
--
-- Counting the unsummarized turns subtracts the few markers, found by type:
CREATE INDEX events_by_type ON events (entity, event_type, id);

-- The markers indexed before this version lose their search rows and vectors (the FTS5
-- index follows by trigger). The generation bump tells a process holding an entity's
-- vectors in memory to load them again. The neighbouring turns keep a marker's words in
-- their context (half weight in BM25) until their context is next rewritten.
UPDATE search_generations SET generation = generation + 1
    WHERE entity IN (
        SELECT DISTINCT c.entity FROM search_chunks c JOIN events e ON e.id = c.event_id
        WHERE e.event_type IN ('session_start', 'session_end', 'pre_compact', 'delete')
    );

DELETE FROM search_vectors
    WHERE chunk_id IN (
        SELECT c.id FROM search_chunks c JOIN events e ON e.id = c.event_id
        WHERE e.event_type IN ('session_start', 'session_end', 'pre_compact', 'delete')
    );

DELETE FROM search_chunks
    WHERE event_id IN (
        SELECT id FROM events
        WHERE event_type IN ('session_start', 'session_end', 'pre_compact', 'delete')
    );
