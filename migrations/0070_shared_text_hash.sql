-- A shared memory's text, hashed (SHA-256 of the text without its surrounding blank
-- lines), so the same text added again by the same writer to the same store answers
-- with the memory already there instead of storing it twice. NULL for the folder
-- indexer's memories (one per file, whatever the text); those stored before this are
-- hashed from their files at their writer's next add (engine/contracts/shared_memory.py).

ALTER TABLE shared_memories ADD COLUMN text_hash TEXT;

CREATE INDEX shared_memories_by_text ON shared_memories (store, written_by, text_hash);
