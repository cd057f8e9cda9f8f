"""`pps import journals FOLDER`: markdown journals as longform events.

A dated daily file (a date in its path: 2026-01-04.md, journal_20260104.md,
2026/01/04.md) becomes a longform event on the `journal` channel, dated that day
(00:00 UTC); a file over the content limit becomes several, one per part. Uids are
`journal:<relative path>:<part>`, so a re-run stores nothing twice (a file edited since
keeps its first import: raw capture is a log, not a mirror). Files without a date are
skipped and counted: notes that are not a journal are searched as files in the entity's
home (a domain collection, docs/capture.md), not imported.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any

from rich.progress import Progress

from engine.kernel import private
from ingest import events as ev
from ingest.importers import Import, Summary, markdown_files, progress_task, read_text

CHANNEL = "journal"
_DATE = re.compile(r"(?<!\d)(\d{4})[-_./]?(\d{2})[-_./]?(\d{2})(?!\d)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def journal_date(relative: str) -> date | None:
    """The last valid date written in the path (the most specific one)."""
    for match in reversed(list(_DATE.finditer(relative))):
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            continue
    return None


def run(importer: Import, folder: Path, *, progress: Progress | None = None) -> Summary:
    summary = importer.summary
    files = markdown_files(folder)
    advance = progress_task(progress, "journals", len(files))
    for file in files:
        advance(1)
        relative = file.relative_to(folder).as_posix()
        summary.files += 1
        summary.read += 1
        day = journal_date(relative)
        if day is None:
            summary.skip(relative, "no date (YYYY-MM-DD) in the path: not a journal entry")
            continue
        try:
            text = read_text(file)
        except ValueError as exc:
            summary.skip(relative, str(exc))
            continue
        if not text.strip():
            summary.skip(relative, "empty file")
            continue
        for event in markdown_events(
            text,
            channel=CHANNEL,
            relative=relative,
            uid=("journal", relative),
            created_at=f"{day.isoformat()}T00:00:00Z",
            metadata={"source": "journal", "path": relative, "date": day.isoformat()},
            max_bytes=importer.max_content_bytes,
        ):
            importer.add(event, relative)
    return importer.finish()


def markdown_events(
    text: str,
    *,
    channel: str,
    relative: str,
    uid: tuple[object, ...],
    created_at: str,
    metadata: dict[str, Any],
    max_bytes: int,
) -> list[dict[str, Any]]:
    """A markdown file as longform events: one, or one per part when it is over the
    content limit; uids `<uid parts>:<part>`, the first heading as the title. Its private
    text is stripped before it is cut (a span may cross a cut, and its end would be left
    as text); a file of only private text is one event, which the import skips, saying
    why."""
    kept = private.strip(text)
    heading = _HEADING.search(kept)
    pieces = ev.parts(kept, max_bytes) if kept.strip() else [text]
    events = []
    for n, piece in enumerate(pieces, 1):
        meta = dict(metadata)
        if heading:
            meta["title"] = heading[1][:200]
        if len(pieces) > 1:
            meta.update(part=n, parts=len(pieces))
        events.append(
            {
                "event_uid": ev.uid(*uid, n),
                "channel": channel,
                "event_type": "longform",
                "content": piece,
                "session_id": f"{channel}:{relative}"[:256],
                "created_at": created_at,
                "metadata": meta,
            }
        )
    return events
