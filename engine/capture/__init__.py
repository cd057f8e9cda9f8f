"""Layer 1, raw capture: every event from every channel, in SQLite; the source of truth.
Also the entities, whose tokens decide whose memory a request touches.
"""
