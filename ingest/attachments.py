"""Folders attached to an entity: a journal folder as a domain collection, an OpenClaw
workspace as the entity's memory files.

Where they are read from is the search layer's business (engine.homes: the entity's home
on the service, set per entity by PPS_ENTITY_HOMES, with domain collections as folders
inside it). It has no way yet to attach a folder at run time, so `pps import ... --attach`
records the folder here, in one 0600 JSON file per service and token under the client
directory, and the command prints the setting that makes the service read it today.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from engine.store import timestamps
from engine.store.config import Settings
from engine.store.db import ensure_private_dir
from ingest.client import client_dir, identity, read_token, service_url

Kind = Literal["collection", "memory"]


@dataclass(frozen=True)
class Attachment:
    kind: Kind
    name: str
    path: str
    files: int
    attached_at: str


def registry_path(settings: Settings) -> Path:
    of = identity(service_url(settings), read_token(settings))
    return client_dir(settings) / f"attachments-{of}.json"


def attached(settings: Settings) -> list[Attachment]:
    try:
        data = json.loads(registry_path(settings).read_text())
    except FileNotFoundError:
        return []
    return [Attachment(**item) for item in data.get("attachments", [])]


def attach(settings: Settings, kind: Kind, name: str, folder: Path, files: int) -> Attachment:
    """Record `folder` (resolved) under `name`; attaching the same folder again as the same
    kind updates its entry rather than adding a second one."""
    folder = folder.resolve()
    entry = Attachment(kind, name, str(folder), files, timestamps.now())
    kept = [a for a in attached(settings) if not (a.kind == kind and a.path == str(folder))]
    path = registry_path(settings)
    ensure_private_dir(path.parent)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        body = {"attachments": [asdict(a) for a in [*kept, entry]]}
        os.write(fd, (json.dumps(body, indent=2) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    return entry
