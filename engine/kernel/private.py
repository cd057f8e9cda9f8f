"""Private text: what a user wraps in `<private>…</private>` is never stored nor sent.
Every client strips it before an event leaves the machine (the Claude Code hooks and
transcript sweep before they derive a turn's uid; the spool, which every client writes
before it sends), and the service strips it again from every event it is sent (the event
wire shape, engine.kernel.events), for clients that do not."""

from __future__ import annotations

import re

_INVISIBLE = "[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff]"
"""Characters that show nothing (zero-width spaces and joiners, direction marks, the
soft hyphen, variation selectors): they cannot hide a tag from us by splitting it."""
_GAP = rf"(?:\s|{_INVISIBLE})*"
_WORD = f"{_INVISIBLE}*".join("private")
_OPEN = rf"<{_GAP}{_WORD}(?:(?:[\s/]|{_INVISIBLE})[^>]*)?>"
"""`<private>`, also with attributes (`<private reason="pin">`) or invisible characters."""
_CLOSE = rf"<{_GAP}/{_GAP}{_WORD}{_GAP}>"
_SPAN = re.compile(rf"{_OPEN}.*?(?:{_CLOSE}|\Z)", re.IGNORECASE | re.DOTALL)
"""A private span; an unclosed `<private>` hides everything after it. A closing tag
without its opening one is left as it is: text."""


def strip(text: str) -> str:
    """`text` without its private spans."""
    if "<" not in text:
        return text
    return _SPAN.sub("", text)
