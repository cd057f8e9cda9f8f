"""The tool semantics of the user's seeds over the layers: the shared-memory store and
OpenClaw's session transcripts.
"""
