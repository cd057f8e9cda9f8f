"""Events as the clients build them: stable uids, and content cut to the service's limit,
without its private text (engine.kernel.private).

Every channel's event_uid is derived from something the source already names (a
transcript line's uuid, a Discord message id, a journal's path), so capturing the same
thing twice, by a hook and later by an importer, or by a re-run, stores it once.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from engine.kernel import private
from engine.kernel.patterns import EVENT_UID_PATTERN

_UID = re.compile(EVENT_UID_PATTERN)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:@/+=#-]")


def uid(*parts: object) -> str:
    """Join parts with ':' into a valid event_uid. Characters the service does not take
    are replaced, and then a short hash of the original keeps different inputs apart."""
    raw = ":".join(str(part) for part in parts)
    if _UID.fullmatch(raw):
        return raw
    digest = hashlib.sha256(raw.encode()).hexdigest()[:12]
    safe = _UNSAFE.sub("_", raw)
    if not safe[:1].isalnum():
        safe = "x" + safe
    return f"{safe[: 200 - 13]}={digest}"


def parts(text: str, max_bytes: int) -> list[str]:
    """`text` cut into pieces of at most `max_bytes` UTF-8 bytes, at line ends where it
    can, never inside a character. Nothing is dropped: a long turn becomes several events."""
    data = text.encode()
    if len(data) <= max_bytes:
        return [text]
    pieces, start = [], 0
    while start < len(data):
        end = min(start + max_bytes, len(data))
        if end < len(data):
            newline = data.rfind(b"\n", start + max_bytes // 2, end)
            if newline != -1:
                end = newline + 1
            while end > start and (data[end] & 0xC0) == 0x80:
                end -= 1  # back off a continuation byte: cut between characters
        pieces.append(data[start:end].decode())
        start = end
    return [piece for piece in pieces if piece.strip()] or [text]


def split(event: dict[str, Any], max_bytes: int) -> list[dict[str, Any]]:
    """One event, or its content in parts: `<uid>#2`, `<uid>#3`, ... with `part`/`parts`
    in the metadata (the first part keeps the uid, so an event that fits is unchanged).
    Its private text is stripped first (a span may cross a cut): none when that was all."""
    content = private.strip(event["content"])
    if not content.strip() and content != event["content"]:
        return []
    event = {**event, "content": content}
    pieces = parts(content, max_bytes)
    if len(pieces) == 1:
        return [event]
    out = []
    for n, piece in enumerate(pieces, 1):
        metadata = {**event.get("metadata", {}), "part": n, "parts": len(pieces)}
        part_uid = event["event_uid"] if n == 1 else f"{event['event_uid']}#{n}"
        out.append({**event, "event_uid": part_uid, "content": piece, "metadata": metadata})
    return out
