"""The kernel: what the server and its clients both stand on, and nothing else of pps.
Settings, the error vocabulary with its HTTP statuses, the request-model base,
timestamps, addresses, the names an event may carry and its wire shape, recall's limits,
private files, and the stripping of private text. `ingest/` (the hooks, the spool, the
importers, the MCP relay) imports only this package of the engine (tests/test_layers.py
holds it).
"""
