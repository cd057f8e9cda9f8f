"""What a recall is asked and what it answers: the request, each layer's items, the
manifest's report of every layer, and what fusion dropped. Every recall module and every
face speaks these."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from engine.kernel import limits, private
from engine.kernel.patterns import CHANNEL_PATTERN, EVENT_UID_PATTERN
from engine.kernel.requests import Request


class RecallRequest(Request):
    context: str = Field(
        min_length=1, max_length=limits.CONTEXT_MAX_CHARS, description='"startup" or the moment.'
    )
    limit_per_layer: int = Field(5, ge=1, le=50)
    channel: str | None = Field(
        None,
        pattern=CHANNEL_PATTERN,
        description="The caller's channel: its turns are not news from other channels.",
    )
    session_id: str | None = Field(
        None,
        max_length=256,
        description="The caller's session: the caller holds its turns already, so no layer"
        " returns them (nor counts them as news from other channels), and what earlier"
        " recalls of the session gave it, which an ambient recall leaves out (a startup"
        " recall is a clean context: it starts again).",
    )
    answering: list[Annotated[str, Field(pattern=EVENT_UID_PATTERN)]] = Field(
        default_factory=list,
        max_length=limits.ANSWERING_MAX,
        description="The event_uids of the event this recall is for (a prompt, in all its"
        " parts): no layer returns them, even when they are already stored.",
    )
    max_tokens: int = Field(2000, ge=100, le=200_000)
    max_chars: int | None = Field(
        None,
        ge=limits.MAX_CHARS_MIN,
        le=limits.MAX_CHARS_MAX,
        description="Most characters of `context`, the formatted block: items are kept in"
        " priority order and the block says what was left out and how to get it.",
    )
    trace: bool = Field(False, description="Show each item's signals: why it surfaced.")

    @field_validator("context")
    @classmethod
    def _context(cls, value: str) -> str:
        """Private text is neither searched for nor logged (engine.kernel.private)."""
        kept = private.strip(value)
        if not kept.strip():
            raise ValueError("context is only private text (<private>…</private>)")
        return kept


class Item(BaseModel):
    layer: str
    text: str
    score: float
    source: dict[str, Any]
    signals: dict[str, float] | None = None


class LayerReport(BaseModel):
    status: Literal["ok", "timeout", "down", "empty", "waiting"]
    count: int = 0
    chars: int = 0
    latency_ms: float = 0.0
    budget_ms: float | None = Field(None, description="The layer's time budget.")
    detail: str | None = None


Reason = Literal["duplicate", "held", "max_tokens", "max_chars"]
"""Why an item was dropped: a better item is the same memory, the session holds it
already, or it is past a budget."""


class Dropped(BaseModel):
    """An item a layer found that the answer does not hold, and why (with `trace`)."""

    layer: str
    text: str
    score: float
    source: dict[str, Any]
    reason: Reason
    detail: str


class Recall(BaseModel):
    context: str = Field(description="The formatted block, ready to inject.")
    items: list[Item]
    manifest: dict[str, LayerReport]
    unsummarized: int
    warning: str | None
    more_unsummarized: int = Field(
        0, description="Startup: unsummarized turns not included (past the cap, or max_chars)."
    )
    left_out: dict[str, int] = Field(
        default_factory=dict, description="Items left out to stay within max_chars, by layer."
    )
    dropped: list[Dropped] | None = Field(
        None,
        description="With `trace`: what layers found and fusion dropped (a duplicate of a"
        " better item, past max_tokens or max_chars), and why.",
    )
    latency_ms: float
