"""What a `pps export` is, as both its writer (exporting: `pps export`) and its reader
(importing: `pps import export`) know it: one entity as plain files a person can read,
diff and keep in git, to be taken into another data dir or under another name.

An export is a folder:

    export.json        format, pps and schema versions, the entity, counts, what is not in it
    events.jsonl       one event a line, every field, in the order stored (oldest first)
    summaries.jsonl    one summary a line; its range named by its first and last event_uid
    inventory.jsonl    the spaces, then the items, then where the entity is on each channel
    home/...           the home's files as they are: word-photos, fragments, memory
                       files, documents, crystals

Derived data (the search index, the graph, the queue) is not in it: an import rebuilds it.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from engine.kernel.files import ensure_private_dir

FORMAT = "pps-export/1"
MANIFEST = "export.json"
EVENTS = "events.jsonl"
SUMMARIES = "summaries.jsonl"
INVENTORY = "inventory.jsonl"
HOME = "home"


class ExportError(Exception):
    """Why an export or an import did not happen (an import: nothing was written)."""


def copy_file(source: Path, destination: Path, replace: bool = True) -> None:
    """Copy a file, 0600 in 0700 folders, whole before it takes its name. Without
    `replace`, a file that took the name meanwhile is not overwritten (FileExistsError)."""
    ensure_private_dir(destination.parent)
    temporary = destination.with_name(f".{destination.name}.{uuid.uuid4().hex[:12]}.tmp")
    fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        with os.fdopen(fd, "wb") as out, open(source, "rb") as handle:
            shutil.copyfileobj(handle, out, 1024 * 1024)
            out.flush()
            os.fsync(out.fileno())
        if replace:
            os.replace(temporary, destination)
        else:
            os.link(temporary, destination)
    finally:
        temporary.unlink(missing_ok=True)
