"""`pps import claude-code PATH...`: Claude Code session transcripts (JSONL).

A path is a transcript file or a folder searched for `*.jsonl` (such as
~/.claude/projects). Turns are read exactly as the hooks read them (ingest.claude_code),
with the same uids, so a session the hooks captured imports as duplicates.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.progress import Progress

from ingest.claude_code import Occurrences, turn_events
from ingest.importers import Import, Summary, progress_task


def transcripts(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found += sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    return found


def run(importer: Import, paths: list[Path], *, progress: Progress | None = None) -> Summary:
    summary = importer.summary
    files = transcripts(paths)
    advance = progress_task(
        progress, "claude-code transcripts", sum(f.stat().st_size for f in files if f.is_file())
    )
    occurrences = Occurrences()
    for file in files:
        summary.files += 1
        if not file.is_file() or not os.access(file, os.R_OK):
            summary.skip(str(file), "not a readable file")
            continue
        with open(file, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                advance(len(raw))
                if not raw.strip():
                    continue
                summary.read += 1
                where = f"{file.name}:{number}"
                try:
                    record = json.loads(raw.decode())
                    found = turn_events(
                        record,
                        occurrences,
                        session=file.stem,
                        max_bytes=importer.max_content_bytes,
                    )
                except UnicodeDecodeError:
                    summary.skip(where, "not UTF-8 text")
                    continue
                except ValueError as exc:
                    summary.skip(where, f"invalid JSON: {exc}" if _json(exc) else str(exc))
                    continue
                if not found:
                    summary.other += 1
                for event in found:
                    importer.add(event, where)
    return importer.finish()


def _json(exc: ValueError) -> bool:
    return isinstance(exc, json.JSONDecodeError)
