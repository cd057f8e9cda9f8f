"""MCP servers, one module per profile (pps, wordwalker, openclaw, shared-memory).

Each tool is a thin adapter over an engine service: parse the arguments, call the
service with the caller's entity, shape the answer. No memory logic lives here.
"""

PATHS = {
    "pps": "/mcp",
    "wordwalker": "/mcp/wordwalker",
    "openclaw": "/mcp/openclaw",
    "shared-memory": "/mcp/shared-memory",
}
"""Where each profile is served. A plain table, and this module imports nothing: `pps mcp`
needs it and must start without loading the servers (mount.py builds them)."""
