"""`pps import openclaw WORKSPACE`: an OpenClaw workspace's memory files as longform events.

A workspace holds MEMORY.md (curated memory, edited in place) and memory/**/*.md (daily
notes, memory/2026-02-07.md, and topic notes). Each readable file becomes a longform event
on the `openclaw` channel (one per part when it is over the content limit), dated by the
date in its path or else by when the file last changed. Its uid holds a hash of the text:
a re-run stores an unchanged file as a duplicate and an edited one as a new event (the
log keeps what MEMORY.md said then, and now). Unreadable files are skipped and counted.

This is an import, a copy at the time it runs. To have the service search the files
themselves, following every edit, make the workspace the entity's home on the service
(PPS_ENTITY_HOMES): its layout is a home's, MEMORY.md and memory/ are its memory files.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rich.progress import Progress

from engine.kernel import timestamps
from ingest.importers import Import, Summary, markdown_files, progress_task, read_text
from ingest.importers.journals import journal_date, markdown_events

CHANNEL = "openclaw"


class WorkspaceError(Exception):
    """The folder is not an OpenClaw workspace; nothing was imported."""


def memory_files(workspace: Path) -> list[Path]:
    found = [workspace / "MEMORY.md"] if (workspace / "MEMORY.md").is_file() else []
    memory = workspace / "memory"
    return found + (markdown_files(memory) if memory.is_dir() else [])


def run(importer: Import, workspace: Path, *, progress: Progress | None = None) -> Summary:
    if not workspace.is_dir():
        raise WorkspaceError(f"{workspace} is not a folder")
    files = memory_files(workspace)
    if not files:
        raise WorkspaceError(f"{workspace} has neither MEMORY.md nor memory/*.md")
    summary = importer.summary
    advance = progress_task(progress, "openclaw memory files", len(files))
    for file in files:
        advance(1)
        relative = file.relative_to(workspace).as_posix()
        summary.files += 1
        summary.read += 1
        try:
            text = read_text(file)
            changed = file.stat().st_mtime
        except (ValueError, OSError) as exc:
            summary.skip(relative, str(exc))
            continue
        if not text.strip():
            summary.skip(relative, "empty file")
            continue
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        metadata = {"source": "openclaw", "path": relative, "sha256": digest}
        day = journal_date(relative)
        if day is not None:
            metadata["date"] = day.isoformat()
            created_at = f"{day.isoformat()}T00:00:00Z"
        else:
            created_at = timestamps.normalise(changed)
        for event in markdown_events(
            text,
            channel=CHANNEL,
            relative=relative,
            uid=("openclaw", relative, digest),
            created_at=created_at,
            metadata=metadata,
            max_bytes=importer.max_content_bytes,
        ):
            importer.add(event, relative)
    return importer.finish()
