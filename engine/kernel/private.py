"""Private text: what a user wraps in `<private>…</private>` is never stored nor sent.
Every client strips it before an event leaves the machine (the Claude Code hooks and
transcript sweep before they derive a turn's uid; the spool, which every client writes
before it sends), and the service strips it again from every event it is sent (the event
wire shape, engine.kernel.events), for clients that do not."""

from __future__ import annotations

import re

_SPAN = re.compile(r"<\s*private\s*>.*?(?:<\s*/\s*private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
"""A private span; an unclosed `<private>` hides everything after it."""
_STRAY = re.compile(r"<\s*/\s*private\s*>", re.IGNORECASE)
"""A closing tag left without its opening one."""


def strip(text: str) -> str:
    """`text` without its private spans (and without stray closing tags)."""
    if "private" not in text.lower():
        return text
    return _STRAY.sub("", _SPAN.sub("", text))
