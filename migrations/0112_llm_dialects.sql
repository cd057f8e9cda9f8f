-- The structured-output dialect each OpenAI-compatible LLM endpoint was found to speak
-- (engine/llm/dialect.py): learnt from a refusal that names the `response_format` types
-- the server accepts, or from its GET /models, and used from then on, across restarts.
-- The endpoint is its base URL without credentials; the evidence is what the server said.
CREATE TABLE llm_dialects (
    endpoint    TEXT PRIMARY KEY,
    dialect     TEXT NOT NULL CHECK (dialect IN ('json_schema', 'json_object_schema')),
    evidence    TEXT NOT NULL,
    learned_at  TEXT NOT NULL
) WITHOUT ROWID;
