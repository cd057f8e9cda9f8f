"""Importers: history from files, sent through the same client as live capture.

Each importer reads its source and hands events to an `Import`, which checks each one
as the service would (so one bad record is skipped and counted, not a whole batch
refused), sends them in batches through the client (spooled when the service is down),
and counts what happened. Uids are stable, so a re-run stores nothing twice.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.progress import Progress

from engine.kernel.errors import from_validation
from engine.kernel.events import EventIn
from ingest import events as ev
from ingest.client import Client

FIRST_ERRORS = 10


def progress_task(progress: Progress | None, description: str, total: int) -> Callable[[int], None]:
    """A function that advances a bar by n (or does nothing without a progress display)."""
    if progress is None:
        return lambda n: None
    task = progress.add_task(description, total=total)
    return lambda n: progress.advance(task, n)


@dataclass
class Summary:
    """What an import did. `read`: records read (lines, rows, files); `other`: records that
    are not events (tool results, system lines); `skipped`: bad records, not sent."""

    source: str
    files: int = 0
    read: int = 0
    imported: int = 0
    duplicates: int = 0
    other: int = 0
    skipped: int = 0
    rejected: int = 0
    spooled: int = 0
    errors: list[str] = field(default_factory=list)
    service_error: str | None = None

    def skip(self, where: str, problem: str) -> None:
        self.skipped += 1
        if len(self.errors) < FIRST_ERRORS:
            self.errors.append(f"{where}: {problem}")


class Import:
    """Collects events and sends them in batches. After the first failure to reach the
    service, the rest is only spooled (one timeout, not one per batch)."""

    def __init__(self, client: Client, summary: Summary, *, max_content_bytes: int):
        self.client = client
        self.summary = summary
        self.max_content_bytes = max_content_bytes
        self._pending: list[dict[str, Any]] = []

    def add(self, event: dict[str, Any], where: str) -> None:
        try:
            pieces = ev.split(event, self.max_content_bytes)
            if not pieces:
                raise ValueError("only private text (<private>…</private>): never imported")
            for piece in pieces:
                checked = EventIn.model_validate(piece)
                size = len(json.dumps(checked.metadata))
                if size > self.max_content_bytes:
                    raise ValueError(
                        f"metadata: {size} bytes as JSON; the most is {self.max_content_bytes}"
                    )
        except ValidationError as exc:
            self.summary.skip(where, str(from_validation(exc.errors())))
            return
        except (ValueError, KeyError, TypeError) as exc:
            self.summary.skip(where, str(exc) or type(exc).__name__)
            return
        self._pending += pieces
        if len(self._pending) >= self.client.batch:
            self.send()

    def send(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        if self.summary.service_error is not None:
            self.client.spool.append(batch)
            self.summary.spooled += len(batch)
            return
        result = self.client.send(batch, wait=True)
        seen: set[str] = set()
        acked = 0
        for event in batch:
            uid = event["event_uid"]
            if uid in result.acked:
                acked += 1
                new = uid not in seen and not result.acked[uid]  # a repeat is a duplicate
                self.summary.imported += new
                self.summary.duplicates += not new
                seen.add(uid)
        self.summary.rejected += result.rejected
        self.summary.spooled += max(0, len(batch) - acked - result.rejected)
        if result.error is not None:
            self.summary.service_error = result.error

    def finish(self) -> Summary:
        self.send()
        return self.summary


def read_text(path: Path) -> str:
    """A text file as UTF-8 (with or without a BOM) or UTF-16 with its BOM; anything else
    raises ValueError: guessing an encoding would store mojibake."""
    data = path.read_bytes()
    try:
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return data.decode("utf-16")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start}); convert it to UTF-8") from None


def markdown_files(folder: Path) -> list[Path]:
    """Markdown files under `folder`, in path order, leaving out hidden folders (.git,
    .obsidian)."""
    return sorted(
        path
        for path in folder.rglob("*")
        if path.suffix.lower() in (".md", ".markdown")
        and path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(folder).parts)
    )
