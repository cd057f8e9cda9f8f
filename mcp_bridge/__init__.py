"""MCP servers, one module per profile (pps, wordwalker, openclaw, shared-memory).

Each tool is a thin adapter over the front door (engine.api): its arguments are the
fields of a request model, the one REST takes (caller.py), it calls the caller's memory
with it, and shapes the answer. No memory logic lives here.
"""

PATHS = {
    "pps": "/mcp",
    "wordwalker": "/mcp/wordwalker",
    "openclaw": "/mcp/openclaw",
    "shared-memory": "/mcp/shared-memory",
}
"""Where each profile is served. A plain table, and this module imports nothing: `pps mcp`
needs it and must start without loading the servers (mount.py builds them)."""
