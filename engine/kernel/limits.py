"""What a request may hold, as plain numbers: the engine's request models declare their
fields with them (engine.recall.shapes.RecallRequest), the faces their parameters, and a
client (the Claude Code hooks) cuts what it sends to them without loading the engine's
models."""

CONTEXT_MAX_CHARS = 16_000
"""The longest context (the moment recalled for); search reads its first 4,096."""
ANSWERING_MAX = 100
"""Most event_uids one recall may be answering (a long prompt is stored in parts)."""
MAX_CHARS_MIN = 1_000
MAX_CHARS_MAX = 1_000_000
"""The range of max_chars, the most characters of the formatted block."""
MAX_READ_LINES = 2000
"""The most lines one read of a file gives (memory_get, GET /v1/files)."""
