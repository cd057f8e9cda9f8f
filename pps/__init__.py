"""The composition root, above engine/, mcp_bridge/ and ingest/: the ASGI app (REST routes
and the MCP mounts) and the `pps` command.
"""
