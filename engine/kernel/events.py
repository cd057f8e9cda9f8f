"""The event wire shape: one event as a client sends it. The service checks a batch of
them (engine.capture.events.parse_events); the importers check theirs with the same model
before they spool, so a file that would be refused is named where it is read. Its content
never holds private text (engine.kernel.private): the service strips it here."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from engine.kernel import private
from engine.kernel.patterns import CHANNEL_PATTERN, EVENT_TYPE_PATTERN, EVENT_UID_PATTERN
from engine.kernel.requests import NON_BLANK, Request, is_blank
from engine.kernel.timestamps import Moment

_CHANNEL_HELP = (
    "channel must be 1-64 characters of a-z, 0-9, '_', '.', ':' and '-', "
    "starting with a letter or digit (e.g. 'terminal', 'discord', 'discord:general')"
)


class EventIn(Request):
    """One event as a client sends it."""

    event_uid: str | None = Field(
        None,
        pattern=EVENT_UID_PATTERN,
        description="Stable id from the client; re-sending it stores nothing new.",
    )
    channel: str = Field(
        description="Where it happened: terminal, discord, reflection, ...",
        json_schema_extra={"pattern": CHANNEL_PATTERN},
    )
    event_type: str = Field("message", pattern=EVENT_TYPE_PATTERN)
    author: str | None = Field(None, max_length=256)
    role: str | None = Field(None, max_length=64)
    content: str = Field(json_schema_extra=NON_BLANK)
    metadata: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = Field(None, max_length=256)
    created_at: Moment | None = Field(
        None, description="ISO-8601 with any offset or Z, or epoch seconds; default: now."
    )

    @field_validator("channel")
    @classmethod
    def _channel(cls, value: str) -> str:
        if not re.fullmatch(CHANNEL_PATTERN, value):
            raise ValueError(f"unknown channel format {value!r}: {_CHANNEL_HELP}")
        return value

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError("content must not be empty")
        value = private.strip(value)  # for a client that did not strip it (engine.kernel.private)
        if is_blank(value):
            raise ValueError("content is only private text (<private>…</private>): never stored")
        return value
