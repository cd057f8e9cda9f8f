"""The structured-output dialect of an OpenAI-compatible server: how `response_format`
must be written for it to constrain a reply to a JSON schema, found out per endpoint
and remembered in the database.

Two dialects carry the schema to the server:
- `json_schema`, OpenAI's `{"type": "json_schema", "json_schema": {"name", "schema"}}`:
  vLLM, Ollama's `/v1`, LM Studio and llama.cpp's `llama-server` take it (Ollama and
  vLLM accept `json_object` too but drop a schema put beside it, and LM Studio refuses
  `json_object` outright, so it is the one to start with);
- `json_object_schema`, `{"type": "json_object", "schema": {...}}`: llama-cpp-python's
  server takes only this (its `type` is `text` or `json_object`), and so did
  `llama-server` before it learnt `json_schema`.

With `PPS_LLM_RESPONSE_FORMAT=auto` a server's refusal of one dialect that names the
types it accepts (llama-cpp-python's 500 `Input should be 'text' or 'json_object'`,
an older llama-server's `must be one of "text" or "json_object"`, LM Studio's 400
`must be 'json_schema' or 'text'`) is an answer: the client switches, asks again at
once, and `remember`s the dialect for that endpoint, which later clients (a restart
included) start with. It is logged once and shown by `pps doctor` (`describe`).

Light: sqlite only, no SDK; `pps doctor` reads it through engine.llm.endpoint.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from engine.kernel import timestamps
from engine.kernel.config import Settings
from engine.kernel.errors import Unavailable
from engine.store.db import Database

log = logging.getLogger("pps.llm")

Dialect = Literal["json_schema", "json_object_schema"]
DIALECTS: tuple[Dialect, ...] = ("json_schema", "json_object_schema")
_TYPE_OF: dict[str, str] = {"json_schema": "json_schema", "json_object_schema": "json_object"}
"""The `response_format.type` each dialect sends."""

_NAMES = re.compile(r"\b(text|json_object|json_schema)\b", re.I)
_LISTS = re.compile(r"must be|should be|one of|expected|supported", re.I)
_LIST_ENDS = re.compile(r"\bbut\b|\bgot\b|\binput\b|\breceived\b|[.;\n]", re.I)


@dataclass(frozen=True)
class Learned:
    """What an endpoint was found to speak, from what evidence, and when."""

    dialect: Dialect
    evidence: str
    at: str


_known: dict[tuple[str, str], Learned] = {}
"""(database path, endpoint) -> what this process knows; the database has the rest."""
_lock = threading.Lock()


def endpoint(base_url: str | None) -> str:
    """The key an endpoint is remembered by: its base URL without credentials, query or
    a trailing slash."""
    parts = urlsplit((base_url or "").strip())
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path.rstrip('/')}"


def accepted(message: str) -> set[str]:
    """The `response_format` types a refusal says the server accepts (empty when it names
    none): `must be one of "text" or "json_object", but got: json_schema` gives text and
    json_object, and never the type that was refused after `got`."""
    found: set[str] = set()
    for lists in _LISTS.finditer(message):
        tail = message[lists.end() : lists.end() + 80]
        end = _LIST_ENDS.search(tail)
        found |= {name.lower() for name in _NAMES.findall(tail[: end.start() if end else None])}
    return found


def switch(sent: Dialect, message: str) -> Dialect | None:
    """The dialect to speak instead of `sent`, when `message` (a refusal's text) names
    the types the server accepts and `sent`'s type is not one of them; else None (an
    error of another kind: not ours to read)."""
    if "response_format" not in message and "literal_error" not in message:
        return None
    types = accepted(message)
    if not types or _TYPE_OF[sent] in types:
        return None
    if "json_schema" in types:
        return "json_schema"
    if "json_object" in types:
        return "json_object_schema"
    return None


def remembered(settings: Settings) -> Learned | None:
    """What the settings' endpoint was found to speak, in this process or before it (the
    database), or None."""
    key = (str(settings.database_path), endpoint(settings.llm_base_url))
    with _lock:
        if key in _known:
            return _known[key]
    learned = _read(settings, key[1])
    if learned is not None:
        with _lock:
            _known.setdefault(key, learned)
    return learned


def remember(settings: Settings, dialect: Dialect, evidence: str) -> Learned:
    """Record that the settings' endpoint speaks `dialect` (`evidence`: what it said),
    in this process and in the database; logged once per endpoint and dialect."""
    key = (str(settings.database_path), endpoint(settings.llm_base_url))
    learned = Learned(dialect, evidence[:300], timestamps.now())
    with _lock:
        before = _known.get(key)
        if before is not None and before.dialect == dialect:
            return before
        _known[key] = learned
    stored = _write(settings, key[1], learned)
    log.warning(
        "the LLM at %s speaks %s for structured output (%s); %s",
        urlsplit(key[1]).netloc or key[1],
        dialect,
        learned.evidence,
        "remembered for this endpoint" if stored else "kept until the service stops",
    )
    return learned


def describe(settings: Settings) -> dict:
    """The structured output `pps doctor` shows for an openai_compatible LLM: the
    setting when it is not auto, else what was learned, else what auto starts with."""
    if settings.llm_provider != "openai_compatible":
        return {}
    if settings.llm_response_format != "auto":
        return {"response_format": f"{settings.llm_response_format} (PPS_LLM_RESPONSE_FORMAT)"}
    learned = remembered(settings)
    if learned is None:
        return {"response_format": "json_schema (auto: none refused yet)"}
    return {"response_format": f"{learned.dialect} (learned {learned.at}: {learned.evidence})"}


def _read(settings: Settings, key: str) -> Learned | None:
    if not settings.database_path.exists():
        return None  # never a database made just to look
    db = Database(settings.database_path, busy_timeout_ms=settings.busy_timeout_ms)
    try:
        row = db.conn.execute(
            "SELECT dialect, evidence, learned_at FROM llm_dialects WHERE endpoint = ?", (key,)
        ).fetchone()
    except sqlite3.Error:  # a database older than the table: nothing learned there
        return None
    finally:
        db.close()
    if row is None or row["dialect"] not in DIALECTS:
        return None
    return Learned(row["dialect"], row["evidence"], row["learned_at"])


def _write(settings: Settings, key: str, learned: Learned) -> bool:
    if not settings.database_path.exists():
        return False
    db = Database(settings.database_path, busy_timeout_ms=settings.busy_timeout_ms)
    try:
        with db.write() as conn:
            conn.execute(
                "INSERT INTO llm_dialects (endpoint, dialect, evidence, learned_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (endpoint) DO UPDATE SET"
                " dialect = excluded.dialect, evidence = excluded.evidence,"
                " learned_at = excluded.learned_at",
                (key, learned.dialect, learned.evidence, learned.at),
            )
        return True
    except (sqlite3.Error, Unavailable) as exc:
        log.warning("could not remember the LLM's dialect in the database: %s", exc)
        return False
    finally:
        db.close()
