"""MCP servers, one module per profile (pps, wordwalker, openclaw, shared-memory).

Each tool is a thin adapter over an engine service: parse the arguments, call the
service with the caller's entity, shape the answer. No memory logic lives here.
"""
