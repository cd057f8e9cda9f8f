"""The HTTP layer the faces stand on side by side: REST (`pps.rest`), the web face
(`pps.web`) and the MCP endpoints (`mcp_bridge`). `deps` is what a route needs from the
app (the database, the settings, the caller); `errors` answers every error in the one
error shape, from the engine's one error table; `calls` records who called. No face
imports another; each may import this layer, and this layer imports none of them: the
application that registers each face is above them all (`pps.app`).
"""
