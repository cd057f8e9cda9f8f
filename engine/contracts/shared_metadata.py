"""A shared memory's metadata (engine/contracts/shared_memory.py): what a caller may set,
checked (the keys the store owns refused, the agent a label, the source a category name,
the timestamp normalised, the tags cleaned), and the seed's shape it is answered in, from
the memory's record and its fragment's front matter.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from typing import Any

from engine.capture import entities
from engine.kernel import timestamps
from engine.kernel.errors import InputError
from engine.search import chunks
from engine.search.fragments import CATEGORY_PATTERN, checked_tags

MAX_METADATA_BYTES = 16 * 1024
# Front matter the store itself writes; the metadata names them differently or not at all.
STORED = ("category", "date", "created_at")
_RESERVED = {
    "category": "use source",
    "date": "use timestamp",
    "created_at": "use timestamp",
    "id": "memory_add gives the id",
    "path": "memory_add chooses the path",
    "written_by": "recorded from your token; nobody can set it",
    "updated_by": "recorded from your token; nobody can set it",
    "updated_at": "recorded by the store",
    "store": "the store is the one you are calling",
}
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


def checked(metadata: dict[str, Any]) -> dict[str, Any]:
    """The caller's metadata, checked: keys the store owns refused, agent a label,
    source a category name, timestamp normalised, tags cleaned."""
    if not isinstance(metadata, dict):
        raise InputError.of("metadata", "must be an object of fields")
    try:
        size = len(json.dumps(metadata, ensure_ascii=False).encode())
    except (TypeError, ValueError):
        raise InputError.of("metadata", "must be plain JSON values") from None
    if size > MAX_METADATA_BYTES:
        raise InputError.of("metadata", f"{size} bytes; the maximum is {MAX_METADATA_BYTES}")
    given = dict(metadata)
    for key in given:
        if not _KEY.fullmatch(key):
            raise InputError.of(
                f"metadata.{key}", "a field name is 1-64 letters, digits, '_', '.' or '-'"
            )
        if key in _RESERVED:
            raise InputError.of(f"metadata.{key}", f"reserved; {_RESERVED[key]}")
    if given.get("agent") is not None:
        given["agent"] = agent_label(given["agent"], "metadata.agent")
    else:
        given.pop("agent", None)
    if given.get("source") is not None:
        given["source"] = source_name(given["source"], "metadata.source")
    else:
        given.pop("source", None)
    if given.get("timestamp") is not None:
        given["timestamp"] = moment("metadata.timestamp", given["timestamp"])
    else:
        given.pop("timestamp", None)
    if "tags" in given:
        tags = given["tags"] if given["tags"] is not None else []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InputError.of("metadata.tags", "a list of strings")
        given["tags"] = checked_tags(tags, required=False)
    if "kind" in given and given["kind"] is not None and not isinstance(given["kind"], str):
        raise InputError.of("metadata.kind", "a word: note, doc, transcript, ...")
    return given


def answer(record: dict, header: dict) -> dict[str, Any]:
    """A memory's metadata in the seed's shape: agent, source, kind, timestamp, tags,
    the writer, then whatever else its front matter holds."""
    own = {key: _plain(value) for key, value in header.items() if key not in STORED}
    return _present(
        {
            "agent": record["agent"],
            "source": record["source"],
            "kind": own.pop("kind", "note"),
            "timestamp": record["moment"],
            "tags": chunks.meta_tags(header),
            "written_by": record["written_by"],
            "updated_by": record["updated_by"]
            if record["updated_by"] != record["written_by"]
            else None,
            **{
                key: value
                for key, value in own.items()
                if key not in ("tags", "keywords") and key not in _RESERVED
            },
        }
    )


def agent_label(value: Any, field: str) -> str:
    if not isinstance(value, str) or not entities.NAME_PATTERN.fullmatch(value):
        raise InputError.of(
            field, "an agent label is 1-64 characters of a-z, 0-9, '_' and '-', like a name"
        )
    return value


def source_name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(CATEGORY_PATTERN, value.strip().lower()):
        raise InputError.of(
            field, "a source is 1-64 characters of a-z, 0-9, '_' and '-', starting with a-z or 0-9"
        )
    return value.strip().lower()


def moment(field: str, value: Any) -> str:
    try:
        return timestamps.normalise(value)
    except (TypeError, ValueError) as exc:
        raise InputError.of(field, str(exc)) from None


def _plain(value: Any) -> Any:
    """Front matter as JSON: YAML dates and times become ISO strings."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}
