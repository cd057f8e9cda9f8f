"""Layer 1, raw capture: an entity's events."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from engine.api.part import Part
from engine.capture import events as capture
from engine.capture.events import (
    AroundQuery,
    Event,
    EventQuery,
    Listener,
    Page,
    Recorded,
    SearchHit,
    SearchQuery,
    Stream,
)
from engine.capture.hook_sessions import HookSessions
from engine.kernel.events import EventIn


class Events(Part):
    def parse(self, payload: Any, max_batch: int | None = None) -> builtins.list[EventIn]:
        """One event object or a list of them, checked all at once: an InputError names
        every event's problems. At most `max_batch` (the settings' batch by default)."""
        settings = self.parts.settings
        return capture.parse_events(
            payload,
            max_batch=settings.max_batch if max_batch is None else max_batch,
            max_content_bytes=settings.max_content_bytes,
        )

    def record(
        self,
        events: builtins.list[EventIn],
        received: Sequence[str] | None = None,
        also: Sequence[Listener] = (),
    ) -> builtins.list[Recorded]:
        """Store a batch in one transaction; every layer hears of it (capture's own
        listeners), and `also` inside the same transaction."""
        return self.parts.capture.record(self.entity, events, received=received, also=also)

    def list(self, query: EventQuery) -> Page:
        return capture.list_events(self.parts.db, self.entity, query)

    def search(self, query: SearchQuery) -> builtins.list[SearchHit]:
        return capture.search_events(self.parts.db, self.entity, query)

    def around(self, query: AroundQuery) -> builtins.list[Event]:
        return capture.turns_around(self.parts.db, self.entity, query)

    def around_event(
        self, event: Event, count: int = 20, channel: str | None = None
    ) -> builtins.list[Event]:
        return capture.turns_around_event(self.parts.db, self.entity, event, count, channel)

    def get(self, event_id: int | None = None, event_uid: str | None = None) -> Event:
        return capture.get_event(self.parts.db, self.entity, event_id, event_uid)

    def channels(self) -> builtins.list[Stream]:
        return capture.channels(self.parts.db, self.entity)

    def sessions(self, channel: str | None = None, limit: int = 30) -> builtins.list[Stream]:
        return capture.sessions(self.parts.db, self.entity, channel, limit)

    def in_session(self, session_id: str) -> bool:
        return capture.in_session(self.parts.db, self.entity, session_id)

    def hook_sessions(self, host: str) -> HookSessions:
        """Where `host`'s hooks are in each of this entity's sessions."""
        return HookSessions(self.parts.db, self.entity, host)
