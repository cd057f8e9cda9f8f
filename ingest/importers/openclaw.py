"""`pps import openclaw WORKSPACE`: an OpenClaw-style workspace as the entity's memory files.

A workspace holds MEMORY.md and memory/*.md (daily notes and topics). They stay where they
are, as the source of truth: the folder is attached (see ingest.attachments), after each
file has been checked to be readable text; unreadable ones are reported, not attached
silently.
"""

from __future__ import annotations

from pathlib import Path

from engine.store.config import Settings
from ingest import attachments
from ingest.importers import Summary, markdown_files, read_text


class WorkspaceError(Exception):
    """The folder is not an OpenClaw workspace; nothing was attached."""


def memory_files(workspace: Path) -> list[Path]:
    found = [workspace / "MEMORY.md"] if (workspace / "MEMORY.md").is_file() else []
    memory = workspace / "memory"
    return found + (markdown_files(memory) if memory.is_dir() else [])


def attach(
    settings: Settings, workspace: Path, name: str | None
) -> tuple[attachments.Attachment, Summary]:
    if not workspace.is_dir():
        raise WorkspaceError(f"{workspace} is not a folder")
    files = memory_files(workspace)
    if not files:
        raise WorkspaceError(f"{workspace} has neither MEMORY.md nor memory/*.md")
    summary = Summary(source="openclaw")
    for file in files:
        summary.files += 1
        summary.read += 1
        try:
            read_text(file)
        except ValueError as exc:
            summary.skip(file.relative_to(workspace).as_posix(), str(exc))
    good = summary.files - summary.skipped
    entry = attachments.attach(
        settings, "memory", name or workspace.resolve().name, workspace, good
    )
    return entry, summary
