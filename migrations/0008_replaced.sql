-- Layer 1 as a conversation changes (engine/capture/events.py `supersede`): an edit
-- replaces a message, a deletion tombstones it. The original stays, marked: `replaced_by`
-- is the event_uid of its newest edit, `deleted_at` when it was deleted. A marked event
-- is no turn: never searched or recalled as current (engine/capture/markers.py).
ALTER TABLE events ADD COLUMN replaced_by TEXT;
ALTER TABLE events ADD COLUMN deleted_at TEXT;

-- The edits and deletions of a message, found by the event_uid they name.
CREATE INDEX events_naming ON events (
    entity, coalesce(json_extract(metadata, '$.replaces'), json_extract(metadata, '$.deletes'))
) WHERE event_type IN ('edit', 'delete');

-- What is no turn any more, found as fast as the markers are (unsummarized counts).
CREATE INDEX events_gone ON events (entity, id)
    WHERE replaced_by IS NOT NULL OR deleted_at IS NOT NULL;
