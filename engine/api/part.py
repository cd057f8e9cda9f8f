"""The base of each layer's part of a `Memory`: the engine's parts and whose memory it is."""

from __future__ import annotations

from engine.api.parts import Parts


class Part:
    def __init__(self, parts: Parts, entity: str):
        self.parts, self.entity = parts, entity
